// The columns of a table exported over several accounts whose tables differ (a custom object's view
// declares the fields of that account's schema): the union, a field typed differently written as text.
import { describe, expect, test } from 'vitest'
import { mergeColumns } from '../../../src/export/export-accounts.js'
import type { ColumnSpec } from '../../../src/model/table-spec.js'

const col = (name: string, kind: ColumnSpec['kind'], nullable = false): ColumnSpec => ({ name, kind, nullable, description: name })

describe('mergeColumns', () => {
  test('the union in the order first met; a column one account lacks is nullable; kinds that differ give text', () => {
    const north = [col('id', 'text'), col('serial', 'integer'), col('installed', 'time')]
    const south = [col('id', 'text'), col('serial', 'text'), col('colour', 'text')]
    expect(mergeColumns([north, south]).map((c) => [c.name, c.kind, c.nullable])).toEqual([
      ['id', 'text', false],
      ['serial', 'text', false],
      ['installed', 'time', true],
      ['colour', 'text', true],
    ])
  })

  test('the same columns everywhere are kept as declared', () => {
    const cols = [col('id', 'text'), col('total', 'real', true)]
    expect(mergeColumns([cols, cols, cols])).toEqual(cols)
  })
})
