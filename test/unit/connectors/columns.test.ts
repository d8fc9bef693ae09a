// The row mapping compiled from declared columns: paths, alternatives, kinds, child rows.
import { describe, expect, test } from 'vitest'
import { col, compileChild, compileColumns, recordTable } from '../../../connectors/columns.js'
import { jobs } from '../../../connectors/jobs.js'

describe('columns compiled from their declaration', () => {
  const table = recordTable('t', 'A test table.', [
    col('a', 'text', 'a', 'A plain field.'),
    col('b', 'text', 'phone.number', 'A nested field.'),
    col('c', 'text', 'first|second', 'The first alternative present.'),
    col('d', 'real', 'd', 'A number.'),
    col('e', 'flag', 'e', 'A boolean.'),
    col('f', 'json', 'f', 'An object.'),
    col('g', 'time', 'g', 'An instant.'),
    col('h', 'integer', 'h', 'A mapped value.', { map: (p) => (p.h as number) * 2 }),
    col('i', 'text', undefined, 'Filled by fsm-sync.'),
  ])
  const map = compileColumns(table)

  test('each kind converts its value; absent or mistyped values are NULL', () => {
    expect(map({ a: 1, phone: { number: '555' }, second: 'two', d: '2.5', e: true, f: { x: 1 }, g: '2026-01-05T10:00:00', h: 3 })).toEqual({
      a: '1',
      b: '555',
      c: 'two',
      d: 2.5,
      e: 1,
      f: '{"x":1}',
      g: '2026-01-05T10:00:00.000Z',
      h: 6,
    })
    expect(map({ phone: 'not an object', first: null, second: 'two', d: 'x', e: 'yes' })).toMatchObject({
      a: null,
      b: null,
      c: 'two',
      d: null,
      e: null,
    })
  })

  test('the shared columns, and columns without a source, are not mapped', () => {
    expect(Object.keys(map({}))).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'])
    expect(table.columns.map((c) => c.name)).toEqual([
      'id',
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
      'g',
      'h',
      'i',
      'created_at',
      'updated_at',
      'deleted_at',
      'raw',
      'synced_at',
    ])
  })

  test('a bytes column, or a child column outside its array, is refused when declared', () => {
    expect(() => compileColumns(recordTable('t', 'x', [col('b', 'bytes', 'b', 'Bytes.')]))).toThrow(/bytes column/)
    expect(() =>
      compileChild('p', {
        table: 'c',
        description: 'x',
        parentColumn: 'p_id',
        each: 'list',
        key: ['v'],
        columns: [col('v', 'text', 'other[]', 'x')],
      }),
    ).toThrow(/from must be list\[\]/)
  })

  test('child rows: one per distinct element, elements without a required value skipped', () => {
    const row = jobs.toRow({ id: 'j1', updatedAt: '2026-01-01T00:00:00Z', assignedToTeams: ['u1', 'u2', 'u1', null, { id: 'x' }] })
    expect(row.children).toEqual([
      {
        table: 'job_assignees',
        parentColumn: 'job_id',
        rows: [
          { job_id: 'j1', user_id: 'u1' },
          { job_id: 'j1', user_id: 'u2' },
        ],
      },
    ])
    expect(jobs.toRow({ id: 'j1', updatedAt: '2026-01-01T00:00:00Z' }).children).toEqual([
      { table: 'job_assignees', parentColumn: 'job_id', rows: [] },
    ])
  })
})
