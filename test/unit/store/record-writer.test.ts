import { statSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { jobs } from '../../../connectors/jobs.js'
import { clients } from '../../../connectors/clients.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { canonicalTime } from '../../../src/model/timestamps.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
const NOW = '2026-06-01T00:00:00.000Z'

function job(id: string, updatedAt: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    jobNumber: `J-${id.slice(-4)}`,
    clientId: 'c'.repeat(24),
    jobStatus: 'scheduled',
    assignedToTeams: ['u1', 'u2'],
    updatedAt,
    createdAt: T(0),
    ...extra,
  }
}

let m: TempMirror
let writer: RecordWriter
beforeEach(async () => {
  m = await tempMirror()
  writer = new RecordWriter(m.sqlite, 'jobs')
})
afterEach(() => m.dispose())

const rows = (sql: string, ...params: unknown[]) => m.sqlite.prepare(sql).all(...params) as Record<string, unknown>[]
const changeLog = () => rows('SELECT record_id, op, updated_at FROM change_log ORDER BY seq')

describe('newer-wins upserts', () => {
  test('insert, then an older version changes nothing and logs nothing', () => {
    const id = 'a'.repeat(24)
    expect(writer.upsert([jobs.toRow(job(id, T(10), { total: 5 }))], { now: NOW, replaceTies: true }).changed).toEqual([id])
    expect(writer.upsert([jobs.toRow(job(id, T(5), { total: 1 }))], { now: NOW, replaceTies: true }).changed).toEqual([])
    expect(rows('SELECT total, updated_at FROM jobs')).toEqual([{ total: 5, updated_at: T(10) }])
    expect(changeLog()).toHaveLength(1)
  })

  test('a repeated page changes nothing and logs no change', () => {
    const page = [jobs.toRow(job('a'.repeat(24), T(1))), jobs.toRow(job('b'.repeat(24), T(2)))]
    writer.upsert(page, { now: NOW, replaceTies: true })
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual([])
    expect(changeLog()).toHaveLength(2)
  })

  test('a newer version replaces the row and its child rows', () => {
    const id = 'a'.repeat(24)
    writer.upsert([jobs.toRow(job(id, T(1)))], { now: NOW, replaceTies: true })
    writer.upsert([jobs.toRow(job(id, T(2), { assignedToTeams: ['u3'] }))], { now: NOW, replaceTies: true })
    expect(rows('SELECT user_id FROM job_assignees WHERE job_id = ?', id)).toEqual([{ user_id: 'u3' }])
    expect(changeLog().map((c) => c.updated_at)).toEqual([T(1), T(2)])
  })

  test('same updatedAt with other content: sweeps replace, webhooks keep', () => {
    const id = 'a'.repeat(24)
    writer.upsert([jobs.toRow(job(id, T(1), { total: 1 }))], { now: NOW, replaceTies: true })
    expect(writer.upsert([jobs.toRow(job(id, T(1), { total: 2 }))], { now: NOW, replaceTies: false }).changed).toEqual([])
    expect(writer.upsert([jobs.toRow(job(id, T(1), { total: 3 }))], { now: NOW, replaceTies: true }).changed).toEqual([id])
    expect(rows('SELECT total FROM jobs')).toEqual([{ total: 3 }])
  })
})

describe('pages', () => {
  const assignees = (id: string) => rows('SELECT user_id FROM job_assignees WHERE job_id = ? ORDER BY user_id', id).map((r) => r.user_id)

  test('the same record twice in one page: the newer version stands with its own child rows', () => {
    const id = 'a'.repeat(24)
    const page = [jobs.toRow(job(id, T(1), { assignedToTeams: ['u1', 'u2'] })), jobs.toRow(job(id, T(2), { assignedToTeams: ['u3'] }))]
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual([id, id])
    expect(rows('SELECT updated_at FROM jobs')).toEqual([{ updated_at: T(2) }])
    expect(assignees(id)).toEqual(['u3'])
    expect(changeLog().map((c) => c.updated_at)).toEqual([T(1), T(2)])
  })

  test('an older copy later in the same page changes nothing', () => {
    const id = 'a'.repeat(24)
    const page = [jobs.toRow(job(id, T(2), { assignedToTeams: ['u3'] })), jobs.toRow(job(id, T(1), { assignedToTeams: ['u1'] }))]
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual([id])
    expect(assignees(id)).toEqual(['u3'])
    expect(changeLog()).toHaveLength(1)
  })

  test('only the changed records of a page get change_log rows and new child rows', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((x) => x.repeat(24)) as [string, string, string]
    writer.upsert([jobs.toRow(job(a, T(5), { assignedToTeams: ['u1'] })), jobs.toRow(job(b, T(5), { assignedToTeams: ['u1'] }))], {
      now: NOW,
      replaceTies: true,
    })
    const page = [
      jobs.toRow(job(a, T(4), { assignedToTeams: ['u9'] })), // older: kept as stored, children too
      jobs.toRow(job(b, T(6), { assignedToTeams: ['u2'] })),
      jobs.toRow(job(c, T(6), { assignedToTeams: [] })),
    ]
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual([b, c])
    expect([assignees(a), assignees(b), assignees(c)]).toEqual([['u1'], ['u2'], []])
    expect(changeLog().map((r) => r.record_id)).toEqual([a, b, b, c])
  })

  test('a page larger than one statement batch writes every row, log entry and child row', () => {
    const ids = Array.from({ length: 250 }, (_, i) => i.toString(16).padStart(24, '0'))
    const page = ids.map((id, i) => jobs.toRow(job(id, T(i % 60), { assignedToTeams: ['u1', `u${i}`] })))
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual(ids)
    expect(rows('SELECT count(*) AS n FROM jobs')).toEqual([{ n: 250 }])
    expect(rows('SELECT count(*) AS n FROM job_assignees')).toEqual([{ n: 499 }]) // u1 twice for the row i = 1
    expect(changeLog().map((r) => r.record_id)).toEqual(ids)
    expect(writer.upsert(page, { now: NOW, replaceTies: true }).changed).toEqual([])
    expect(changeLog()).toHaveLength(250)
  })
})

describe('deletions', () => {
  test('mark deleted sets deleted_at once, keeps the row, logs a delete', () => {
    const id = 'a'.repeat(24)
    writer.upsert([jobs.toRow(job(id, T(1)))], { now: NOW, replaceTies: true })
    expect(writer.markDeleted([id], NOW).changed).toEqual([id])
    expect(writer.markDeleted([id], NOW).changed).toEqual([])
    expect(rows('SELECT id, deleted_at FROM jobs')).toEqual([{ id, deleted_at: NOW }])
    expect(changeLog().map((c) => c.op)).toEqual(['upsert', 'delete'])
  })

  test('a page read before the deletion does not bring the record back, even when newer', () => {
    const id = 'a'.repeat(24)
    writer.upsert([jobs.toRow(job(id, T(1)))], { now: NOW, replaceTies: true })
    writer.markDeleted([id], T(30))
    writer.upsert([jobs.toRow(job(id, T(20), { total: 9 }))], { now: NOW, observedAt: T(25), replaceTies: true })
    expect(rows('SELECT total, deleted_at FROM jobs')).toEqual([{ total: 9, deleted_at: T(30) }])
  })

  test('a list read after the deletion that still shows the record makes it live again', () => {
    const id = 'a'.repeat(24)
    writer.upsert([jobs.toRow(job(id, T(1)))], { now: NOW, replaceTies: true })
    writer.markDeleted([id], T(30))
    expect(writer.upsert([jobs.toRow(job(id, T(1)))], { now: NOW, observedAt: T(31), replaceTies: true }).changed).toEqual([id])
    expect(rows('SELECT deleted_at FROM jobs')).toEqual([{ deleted_at: null }])
  })

  test('a deletion of a record never seen leaves a tombstone an older page cannot revive', () => {
    const id = 'a'.repeat(24)
    expect(writer.markDeleted([id], T(30)).changed).toEqual([id])
    writer.upsert([jobs.toRow(job(id, T(20)))], { now: NOW, observedAt: T(25), replaceTies: true })
    expect(rows('SELECT deleted_at FROM jobs')).toEqual([{ deleted_at: T(30) }])
  })
})

describe('the mirror file', () => {
  test('is created with the default mode (owner read/write, group read: it holds no secret), in WAL mode, with every table', () => {
    expect(statSync(m.path).mode & 0o777).toBe(0o640)
    expect(m.sqlite.pragma('journal_mode', { simple: true })).toBe('wal')
    const tables = rows(`SELECT name FROM sqlite_master WHERE type = 'table'`).map((r) => r.name)
    for (const t of [
      'clients',
      'jobs',
      'visits',
      'invoices',
      'invoice_items',
      'job_assignees',
      'visit_assignees',
      'sync_state',
      'sync_runs',
      'change_log',
    ]) {
      expect(tables).toContain(t)
    }
  })

  test('canonical timestamps: any upstream form becomes YYYY-MM-DDTHH:MM:SS.sssZ', () => {
    const w = new RecordWriter(m.sqlite, 'clients')
    w.upsert(
      [clients.toRow({ id: 'c'.repeat(24), firstName: 'A', updatedAt: '2026-01-01T01:00:00+01:00', createdAt: '2025-12-31T23:00:00Z' })],
      { now: NOW, replaceTies: true },
    )
    expect(rows('SELECT created_at, updated_at FROM clients')).toEqual([
      { created_at: '2025-12-31T23:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' },
    ])
  })
})

describe('canonical time', () => {
  test.each([
    ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.000Z'],
    ['2026-01-01T01:00:00.5+01:00', '2026-01-01T00:00:00.500Z'],
    ['2024-02-29T12:00:00.000Z', '2024-02-29T12:00:00.000Z'],
    ['2026-01-31T23:59:59.999Z', '2026-01-31T23:59:59.999Z'],
  ])('%s -> %s', (input, out) => expect(canonicalTime(input)).toBe(out))

  test.each(['yesterday', ''.padEnd(3, 'x'), '2026-13-01T00:00:00.000Z'])('%s is not a date', (input) => {
    expect(() => canonicalTime(input)).toThrow(TypeError)
  })
})

describe('scoped writers (custom_records: one writer per slug)', () => {
  const rec = (id: string, updatedAt: string, data: Record<string, unknown>) => ({
    id,
    updated_at: updatedAt,
    raw: JSON.stringify({ id, updatedAt, data }),
    columns: { stage: 'new', data: JSON.stringify(data), created_at: T(0) },
  })

  test('the same id under two slugs is two records; deletes and change_log are per slug', () => {
    const a = new RecordWriter(m.sqlite, 'custom_records', { scope: { column: 'slug', value: 'equipment' } })
    const b = new RecordWriter(m.sqlite, 'custom_records', { scope: { column: 'slug', value: 'sites' } })
    a.upsert([rec('r1', T(1), { x: 1 })], { now: NOW, replaceTies: true })
    b.upsert([rec('r1', T(1), { y: 2 })], { now: NOW, replaceTies: true })
    expect(a.upsert([rec('r1', T(0), { x: 0 })], { now: NOW, replaceTies: true }).changed).toEqual([])
    expect(a.markDeleted(['r1'], NOW).changed).toEqual(['r1'])
    expect(rows('SELECT slug, id, data, deleted_at FROM custom_records ORDER BY slug')).toEqual([
      { slug: 'equipment', id: 'r1', data: '{"x":1}', deleted_at: NOW },
      { slug: 'sites', id: 'r1', data: '{"y":2}', deleted_at: null },
    ])
    expect(rows(`SELECT record_id, op FROM change_log WHERE table_name = 'custom_records' ORDER BY seq`)).toEqual([
      { record_id: 'equipment/r1', op: 'upsert' },
      { record_id: 'sites/r1', op: 'upsert' },
      { record_id: 'equipment/r1', op: 'delete' },
    ])
    expect(b.markDeleted(['never-seen'], NOW).changed).toEqual(['never-seen'])
    expect(rows(`SELECT slug, deleted_at FROM custom_records WHERE id = 'never-seen'`)).toEqual([{ slug: 'sites', deleted_at: NOW }])
  })
})
