// A record's row, its change_log row and its child rows commit together, whether or not the caller
// holds a transaction. A trigger that makes the change_log insert fail stands in for a crash
// between the statements.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { jobs } from '../../../connectors/jobs.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
const NOW = '2026-06-01T00:00:00.000Z'
const ID = 'a'.repeat(24)

function job(updatedAt: string, assignedToTeams: string[]) {
  return { id: ID, jobNumber: 'J-0001', clientId: 'c'.repeat(24), jobStatus: 'scheduled', assignedToTeams, updatedAt, createdAt: T(0) }
}

let m: TempMirror
let writer: RecordWriter
beforeEach(async () => {
  m = await tempMirror()
  writer = new RecordWriter(m.sqlite, 'jobs')
  writer.upsert([jobs.toRow(job(T(1), ['u1']))], { now: NOW, replaceTies: true })
})
afterEach(() => m.dispose())

const rows = (sql: string) => m.sqlite.prepare(sql).all() as Record<string, unknown>[]
const failChangeLog = () =>
  m.sqlite.exec(
    `CREATE TRIGGER fail_change_log BEFORE INSERT ON change_log BEGIN SELECT RAISE(ABORT, 'change_log insert refused by the test'); END`,
  )

describe('a write whose change_log row fails leaves nothing of itself behind', () => {
  test('markDeleted outside a transaction does not leave deleted_at set without its change_log row', () => {
    failChangeLog()
    expect(() => writer.markDeleted([ID], NOW)).toThrow(/refused by the test/)
    expect(rows('SELECT deleted_at FROM jobs')).toEqual([{ deleted_at: null }])
    expect(rows(`SELECT op FROM change_log`)).toEqual([{ op: 'upsert' }])
  })

  test('upsert outside a transaction does not leave a new version or new child rows without their change_log row', () => {
    failChangeLog()
    expect(() => writer.upsert([jobs.toRow(job(T(2), ['u2', 'u3']))], { now: NOW, replaceTies: true })).toThrow(/refused by the test/)
    expect(rows('SELECT updated_at FROM jobs')).toEqual([{ updated_at: T(1) }])
    expect(rows('SELECT user_id FROM job_assignees ORDER BY user_id')).toEqual([{ user_id: 'u1' }])
  })

  test('inside a caller transaction, a failed write takes the whole transaction back with it', () => {
    failChangeLog()
    const page = m.sqlite.transaction(() => {
      m.sqlite.exec(`INSERT INTO sync_state (stream, updated_at) VALUES ('jobs', '${NOW}')`)
      writer.markDeleted([ID], NOW)
    })
    expect(page).toThrow(/refused by the test/)
    expect(rows('SELECT deleted_at FROM jobs')).toEqual([{ deleted_at: null }])
    expect(rows('SELECT stream FROM sync_state')).toEqual([])
  })

  test('without the fault, both writes commit with their change_log rows', () => {
    expect(writer.upsert([jobs.toRow(job(T(2), ['u2']))], { now: NOW, replaceTies: true }).changed).toEqual([ID])
    expect(writer.markDeleted([ID], NOW).changed).toEqual([ID])
    expect(rows('SELECT op FROM change_log ORDER BY seq')).toEqual([{ op: 'upsert' }, { op: 'upsert' }, { op: 'delete' }])
  })
})
