import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { legacyId, legacyRows, REFERENCE_STREAMS, referenceRow } from '../../../connectors/reference.js'
import { customRecordToRow, toSchema } from '../../../connectors/custom-objects.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeAll(async () => (m = await tempMirror()))
afterAll(() => m.dispose())
const columnsOf = (table: string) =>
  (m.sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => c.name)
const stream = (name: string) => REFERENCE_STREAMS.find((s) => s.name === name)!

describe('legacy payloads', () => {
  test.each([
    [{ id: 'a1' }, 'a1'],
    [{ _id: 'b2' }, 'b2'],
    [{ recordId: 'c3' }, 'c3'],
    [{ _id: { $oid: 'd4' } }, 'd4'],
    [{ id: '', _id: 'e5' }, 'e5'],
    [{ name: 'no id' }, undefined],
  ])('id variants: %o -> %s', (p, id) => expect(legacyId(p)).toBe(id))

  test.each([
    ['items', [{ id: '1' }], 1, 'data[]'],
    ['taxes', { taxes: [{ id: '1' }, { _id: '2' }] }, 2, 'data.taxes[]'],
    ['team', { team: [{ recordId: '1' }], total: 1 }, 1, 'data.team[]'],
    ['job_forms', { forms: [{ id: '1' }] }, 1, 'data.forms[]'],
  ])('%s: the list is found wherever it sits', (name, data, count, shape) => {
    const r = legacyRows(data, stream(name))
    expect(r.rows).toHaveLength(count)
    expect(r.shape).toBe(shape)
  })

  test('an ambiguous body is a clear error', () => {
    expect(() => legacyRows({ a: [], b: [] }, stream('items'))).toThrow(/no list found/)
  })

  test('company is one object, under data.company or data', () => {
    expect(legacyRows({ company: { companyName: 'Acme' } }, stream('company')).rows).toEqual([{ companyName: 'Acme' }])
    expect(legacyRows({ companyName: 'Acme' }, stream('company')).rows).toEqual([{ companyName: 'Acme' }])
  })

  test.each(REFERENCE_STREAMS.map((s) => [s.name, s] as const))('%s: every mapped column exists in its table', (_n, s) => {
    const row = referenceRow(s, { id: 'x', name: 'n', price: 1, rate: 0.1, isActive: true, companyName: 'c', email: 'e' })!
    const cols = columnsOf(s.table)
    for (const c of ['id', 'updated_at', 'raw', 'synced_at', 'deleted_at', ...Object.keys(row.columns)]) expect(cols).toContain(c)
  })
})

describe('custom object payloads', () => {
  test('schema fields keep display order, names and relation multiplicity', () => {
    const s = toSchema({
      fields: [
        { name: 'b', type: 'text' },
        { name: 'a', type: 'relation', relation: { targetObject: 'x', multi: true } },
        { label: 'no name' },
      ],
      pipeline: { name: 'p' },
    })
    expect(s.fields.map((f) => f.name)).toEqual(['b', 'a'])
    expect(s.fields[1]!.relation).toEqual({ multi: true })
  })

  test('a record row keeps data as JSON and the stage', () => {
    const row = customRecordToRow({
      id: 'r',
      object: 'x',
      stage: 'new',
      data: { a: 1 },
      createdAt: '2026-01-01T00:00:00Z',
      updatedAt: '2026-01-02T00:00:00Z',
    })
    expect(row.columns).toEqual({ stage: 'new', data: '{"a":1}', created_at: '2026-01-01T00:00:00.000Z' })
    expect(columnsOf('custom_records')).toEqual(expect.arrayContaining(['slug', 'id', ...Object.keys(row.columns)]))
  })
})
