// The plan of a batch, from hand-written changes and mirror rows: no server, no mirror file.
import { describe, expect, test } from 'vitest'
import { changedKeys, changesGone, planBatch, planTables, snapshotRead, type Row, type Table } from '../../../src/destination/batch-plan.js'
import { emptyWritten } from '../../../src/destination/replica-state.js'
import type { ColumnKind, ColumnSpec, TableSpec } from '../../../src/model/table-spec.js'
import type { LoggedChange } from '../../../src/store/read-models/mirror-snapshot.js'

const col = (name: string, kind: ColumnKind = 'text'): ColumnSpec => ({ name, kind, nullable: true, description: name })
const spec = (name: string, columns: ColumnSpec[], rest: Partial<TableSpec> = {}): TableSpec => ({
  name,
  description: name,
  role: 'data',
  primaryKey: ['id'],
  columns,
  ...rest,
})
const logged = [col('id'), col('name'), col('updated_at', 'time'), col('deleted_at', 'time')]
const specs: TableSpec[] = [
  spec('change_log', [col('seq', 'integer'), col('table_name'), col('record_id')], { primaryKey: ['seq'] }),
  spec('jobs', logged),
  spec('job_tags', [col('job_id'), col('tag')], { primaryKey: ['job_id', 'tag'], parent: { table: 'jobs', column: 'job_id' } }),
  spec('fields', [col('scope'), ...logged], { primaryKey: ['scope', 'id'] }),
  spec('teams', [col('id'), col('name')]),
  spec('calendar_changes', [col('id'), col('at', 'time')], { appendedBy: 'at' }),
]
const tables = planTables(specs)
const byName = new Map(tables.map((t) => [t.spec.name, t]))
const table = (name: string): Table => byName.get(name)!
let seq = 0
const change = (table_name: string, record_id: string, op: 'upsert' | 'delete' = 'upsert'): LoggedChange => ({
  seq: ++seq,
  table_name,
  record_id,
  op,
  updated_at: null,
  changed_at: '2026-01-01T00:00:00.000Z',
})

describe('the plan of a batch', () => {
  test('each table has its role: change_log, logged, child of a logged table, or compared by content', () => {
    expect(tables.map((t) => [t.spec.name, t.role])).toEqual([
      ['change_log', 'changes'],
      ['jobs', 'logged'],
      ['job_tags', 'child'],
      ['fields', 'logged'],
      ['teams', 'snapshot'],
      ['calendar_changes', 'snapshot'],
    ])
    expect(table('jobs').children).toEqual([table('job_tags')])
  })

  test('keys are named once each, in order, for logged tables only; a two-column key splits at the first slash', () => {
    const changes = [change('jobs', 'j2'), change('teams', 't1'), change('jobs', 'j1'), change('jobs', 'j2'), change('fields', 'acct/f/1')]
    expect(changedKeys(byName, changes)).toEqual(
      new Map([
        [table('jobs'), [['j2'], ['j1']]],
        [table('fields'), [['acct', 'f/1']]],
      ]),
    )
  })

  test('a row the mirror holds is upserted, one it no longer holds is deleted, and children are replaced for every parent', () => {
    const keys = changedKeys(byName, [change('jobs', 'j1'), change('jobs', 'j2', 'delete'), change('fields', 'a/f1')])
    const j1: Row = ['j1', 'first', '2026-01-02T00:00:00.000Z', null]
    const tag: Row = ['j1', 'urgent']
    const plan = planBatch(keys, new Map([[table('jobs'), [j1]]]), new Map([[table('job_tags'), [tag]]]))
    expect(plan).toEqual([
      {
        table: table('jobs'),
        deletes: [['j2']],
        upserts: [j1],
        children: [{ table: table('job_tags'), parentIds: ['j1', 'j2'], rows: [tag] }],
      },
      { table: table('fields'), deletes: [['a', 'f1']], upserts: [], children: [] },
    ])
  })

  test('a key matches its row by value, whatever the type the mirror returns it as', () => {
    const numbered = planTables([spec('n', [col('id', 'integer'), col('updated_at', 'time'), col('deleted_at', 'time')])])[0]!
    const plan = planBatch(new Map([[numbered, [['7'], ['8']]]]), new Map([[numbered, [[7, null, null]]]]), new Map())
    expect(plan[0]!.deletes).toEqual([['8']])
  })

  test('a table compared by content is read again only when its fingerprint moved, an appended one from its watermark', () => {
    const written = emptyWritten()
    expect(snapshotRead(table('teams'), 'fp', written)).toEqual({ kind: 'whole' })
    written.fingerprints.set('teams', 'fp')
    expect(snapshotRead(table('teams'), 'fp', written)).toEqual({ kind: 'unchanged' })
    expect(snapshotRead(table('calendar_changes'), 'fp2', written)).toEqual({ kind: 'whole' })
    written.watermarks.set('calendar_changes', '2026-01-01T00:00:00.000Z')
    expect(snapshotRead(table('calendar_changes'), 'fp2', written)).toEqual({
      kind: 'since',
      column: 'at',
      watermark: '2026-01-01T00:00:00.000Z',
    })
  })

  test.each([
    { what: 'the next change is there', cursor: 4, first: 5, firstKept: 5, last: 9, gone: false },
    { what: 'a gap the mirror pruned', cursor: 4, first: 7, firstKept: 7, last: 9, gone: true },
    { what: 'a gap not pruned (rolled back seqs)', cursor: 4, first: 7, firstKept: 3, last: 9, gone: false },
    { what: 'nothing kept, nothing new', cursor: 9, first: undefined, firstKept: undefined, last: 9, gone: false },
    { what: 'nothing kept, newer changes pruned', cursor: 4, first: undefined, firstKept: undefined, last: 9, gone: true },
    { what: 'nothing after the cursor, older kept', cursor: 9, first: undefined, firstKept: 3, last: 9, gone: false },
  ])('the changes after the cursor are gone: $what', ({ cursor, first, firstKept, last, gone }) => {
    const changes = first === undefined ? [] : [{ ...change('jobs', 'j1'), seq: first }]
    expect(changesGone(cursor, changes, firstKept, () => last)).toBe(gone)
  })
})
