// The snapshot reads `fsm-sync export` and the Postgres destination share (src/store/read-models/mirror-snapshot.ts):
// one read transaction that writers do not disturb, a declared table's rows by key, the records
// changed after a seq with their latest change, rows by key and children by parent.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { catalogTables } from '../../../src/catalog/catalog.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import {
  changedRows,
  changesAfter,
  childRowsOf,
  inReadSnapshot,
  rowsWithKeys,
  snapshotSeq,
  tableRows,
  tablesChangedBetween,
} from '../../../src/store/read-models/mirror-snapshot.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const spec = (name: string): TableSpec => catalogTables().find((t) => t.name === name)!
const T0 = '2026-03-01T10:00:00.000Z'
const T1 = '2026-03-01T11:00:00.000Z'

let m: TempMirror
let jobs: RecordWriter
const job = (id: string, status: string, at = T0) => ({ id, updated_at: at, raw: '{}', columns: { job_status: status } })
const idOf = (row: readonly unknown[], table: TableSpec, column = 'id') => row[table.columns.findIndex((c) => c.name === column)]

beforeEach(async () => {
  m = await tempMirror()
  jobs = new RecordWriter(m.sqlite, 'jobs')
  // Written out of key order: the reads put them in order.
  jobs.upsert([job('j3', 'open'), job('j1', 'open'), job('j2', 'open')], { now: T0, replaceTies: true })
})
afterEach(() => m.dispose())

describe('mirror snapshot reads', () => {
  test("a declared table's rows come by key, every declared column in order", () => {
    const t = spec('jobs')
    const rows = [...tableRows(m.sqlite, t)]
    expect(rows.map((r) => idOf(r, t))).toEqual(['j1', 'j2', 'j3'])
    expect(rows[0]).toHaveLength(t.columns.length)
    expect(new Set([...tableRows(m.sqlite, t, { keyOrder: false })].map((r) => idOf(r, t)))).toEqual(new Set(['j1', 'j2', 'j3']))
  })

  test('the records changed after a seq: one row each with its latest change, a deleted one included', () => {
    const t = spec('jobs')
    const seq = snapshotSeq(m.sqlite)
    expect(seq).toBe(3)
    jobs.upsert([job('j2', 'done', T1)], { now: T1, replaceTies: true })
    jobs.markDeleted(['j3'], T1)
    jobs.upsert([job('j2', 'closed', '2026-03-01T12:00:00.000Z')], { now: T1, replaceTies: true })
    const last = snapshotSeq(m.sqlite)
    expect(tablesChangedBetween(m.sqlite, seq, last)).toEqual(new Set(['jobs']))
    expect(changesAfter(m.sqlite, seq, 10).map((c) => [c.record_id, c.op])).toEqual([
      ['j2', 'upsert'],
      ['j3', 'delete'],
      ['j2', 'upsert'],
    ])
    const changed = [...changedRows(m.sqlite, t, t, seq, last)]
    // By the seq of the latest change: j3's delete, then j2's second update; the row as it is now.
    expect(changed.map((r) => [r[0], r[1], idOf(r.slice(2), t)])).toEqual([
      [seq + 2, 'delete', 'j3'],
      [seq + 3, 'upsert', 'j2'],
    ])
    expect(idOf(changed[1]!.slice(2), t, 'job_status')).toBe('closed')
    expect(idOf(changed[0]!.slice(2), t, 'deleted_at')).toBe(T1)
    expect([...changedRows(m.sqlite, t, t, last, last)]).toEqual([])
  })

  test('rows by key, and the children of given parents', () => {
    const t = spec('jobs')
    expect(
      rowsWithKeys(m.sqlite, t, [['j3'], ['nope'], ['j1']])
        .map((r) => idOf(r, t))
        .sort(),
    ).toEqual(['j1', 'j3'])
    const child = catalogTables().find((c) => c.parent !== undefined)!
    expect(childRowsOf(m.sqlite, child, ['j1'])).toEqual([])
    expect(() => childRowsOf(m.sqlite, t, ['j1'])).toThrow(/not a child table/)
  })

  test('a read snapshot does not see what a writer commits meanwhile', async () => {
    const reader = await openMirror(m.path, { readonly: true })
    try {
      const seen = await inReadSnapshot(reader.sqlite, async () => {
        const before = snapshotSeq(reader.sqlite)
        jobs.upsert([job('j4', 'open')], { now: T0, replaceTies: true })
        await Promise.resolve()
        return { before, after: snapshotSeq(reader.sqlite), rows: [...tableRows(reader.sqlite, spec('jobs'))].length }
      })
      expect(seen).toEqual({ before: 3, after: 3, rows: 3 })
      expect(reader.sqlite.inTransaction).toBe(false)
      expect(snapshotSeq(reader.sqlite)).toBe(4)
    } finally {
      await reader.close()
    }
  })
})
