// `query` and `status` through the real CLI against a real mirror file.
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { clients } from '../../../connectors/clients.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { packageInfo } from '../../../src/config/package-info.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

let db: string
beforeAll(async () => {
  db = path.join(tempDir(), 'mirror.db')
  const m = await openMirror(db)
  const now = new Date().toISOString()
  new RecordWriter(m.sqlite, 'clients').upsert(
    [1, 2, 3].map((i) =>
      clients.toRow({
        id: String(i).repeat(24),
        firstName: `Client ${i}`,
        email: `c${i}@example.com`,
        updatedAt: `2026-01-0${i}T00:00:00.000Z`,
      }),
    ),
    { now, replaceTies: true },
  )
  const state = new SyncStateStore(m.sqlite)
  const run = state.startRun('sweep', 'clients', now)
  state.setCursor('clients', { since: '2026-01-03T00:00:00.000Z', seenIdsAtCursor: ['3'.repeat(24)] }, now)
  state.finishRun(run, { outcome: 'success', rows: 3, requests: 1 }, now)
  state.recordSuccess('clients', run, now)
  const failed = state.startRun('sweep', 'jobs', now)
  state.finishRun(failed, { outcome: 'error', rows: 0, requests: 1, error: 'GET /api/v1/jobs answered 403 FORBIDDEN' }, now)
  state.recordError('jobs', failed, 'GET /api/v1/jobs answered 403 FORBIDDEN', now)
  // A custom object (two live records, one deleted) and reference data, each with its own run.
  const record = m.sqlite.prepare(
    `INSERT INTO custom_records (slug, id, updated_at, deleted_at, raw, synced_at) VALUES (?, ?, ?, ?, '{}', ?)`,
  )
  record.run('equipment', 'e1', now, null, now)
  record.run('equipment', 'e2', now, null, now)
  record.run('equipment', 'e3', now, now, now)
  record.run('vehicles', 'v1', now, null, now)
  m.sqlite.prepare(`INSERT INTO items (id, name, updated_at, raw, synced_at) VALUES ('i1', 'Filter', '', '{}', ?)`).run(now)
  for (const stream of ['objects:equipment', 'items']) {
    const r = state.startRun(stream === 'items' ? 'reference' : 'sweep', stream, now)
    state.finishRun(r, { outcome: 'success', rows: 1, requests: 0 }, now)
    state.recordSuccess(stream, r, now)
  }
  // A custom object's walk under way: its cursor is no keyset.
  state.setCursor('objects:equipment', { updatedSince: '2026-01-02T10:00:00.000Z', next: 'c'.repeat(60), bookmark: now }, now)
  await m.close()
})
afterAll(() => undefined)

const env = (extra: Record<string, string> = {}) => cleanEnv({ FSM_DB: db, ...extra })

describe('fsm-sync query', () => {
  test('json, csv and table formats', async () => {
    const json = await runCli(['query', 'SELECT first_name FROM clients ORDER BY id', '--format', 'json'], env())
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual([{ first_name: 'Client 1' }, { first_name: 'Client 2' }, { first_name: 'Client 3' }])
    const csv = await runCli(['query', 'SELECT count(*) AS n FROM clients', '--format', 'csv'], env())
    expect(csv.stdout).toBe('n\r\n3\r\n')
    const table = await runCli(['query', 'SELECT id, email FROM clients ORDER BY id LIMIT 1'], env())
    expect(table.stdout).toContain('c1@example.com')
    expect(table.stdout).toContain('(1 row)')
  })

  test('a write statement is refused (exit 1) and changes nothing', async () => {
    const r = await runCli(['query', 'DELETE FROM clients'], env())
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/read-only/)
    const count = await runCli(['query', 'SELECT count(*) AS n FROM clients', '--format', 'csv'], env())
    expect(count.stdout).toBe('n\r\n3\r\n')
  })

  test('no mirror yet: a clear error naming what to do', async () => {
    const r = await runCli(['query', 'SELECT 1'], cleanEnv({ FSM_DB: path.join(tempDir(), 'none.db') }))
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/fsm-sync sync/)
  })
})

describe('fsm-sync status', () => {
  test('--json: cursor, last success, last error, rows per stream', async () => {
    const r = await runCli(['status', '--json'], env())
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    const c = report.streams.find((s: { stream: string }) => s.stream === 'clients')
    expect(c).toMatchObject({ rows: 3, deleted: 0, cursor: expect.stringContaining('2026-01-03') })
    expect(c.lastSuccessAt).not.toBeNull()
    const j = report.streams.find((s: { stream: string }) => s.stream === 'jobs')
    expect(j.lastError).toMatch(/403/)
    expect(report.budgetPerMinute).toBe(60)
    expect(report.requestsLastMinute).toBe(2)
    // Custom-object records per object, and the other mirrored tables.
    expect(report.streams.find((s: { stream: string }) => s.stream === 'objects:equipment')).toMatchObject({
      table: 'custom_records',
      rows: 2,
      deleted: 1,
    })
    expect(report.streams.find((s: { stream: string }) => s.stream === 'items')).toMatchObject({ table: 'items', rows: 1, deleted: 0 })
    expect(report.schedulesOff).toEqual([])
    // The release reading the mirror, and whether anything was ever synced into it (docs/deployment.md, Upgrading).
    expect(report.version).toBe(packageInfo().version)
    expect(report.synced).toBe(true)
    // Freshness: when each stream was last swept to the end and the staleness expected of a change
    // without a webhook; every stream is listed, the snapshot ones never read included.
    expect(c.lastSweptAt).toBe(c.lastSuccessAt)
    expect(c.stalenessSeconds).toBeGreaterThanOrEqual(0)
    expect(j).toMatchObject({ lastSweptAt: null, stalenessSeconds: null })
    expect(report.streams.find((s: { stream: string }) => s.stream === 'taxes')).toMatchObject({
      table: 'taxes',
      rows: 0,
      lastSweptAt: null,
    })
  })

  test('schedules switched off are shown', async () => {
    const r = await runCli(['status'], env({ FSM_SCHEDULE_RECONCILE: 'off', FSM_SCHEDULE_CALENDAR_B: 'off' }))
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain('schedules off: reconcile, calendarB')
    const json = JSON.parse((await runCli(['status', '--json'], env({ FSM_SCHEDULE_RECONCILE: 'off' }))).stdout)
    expect(json.schedulesOff).toEqual(['reconcile'])
  })

  test('a readable table: three defined time columns in one duration format, a readable cursor', async () => {
    const r = await runCli(['status'], env())
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^stream\s+table\s+rows\s+deleted\s+last success\s+swept to end\s+staleness\s+cursor\s+last error$/m)
    expect(r.stdout).toMatch(/^taxes\s+taxes\s+0\s+0\s+never\s+never$/m)
    expect(r.stdout).toMatch(/^clients\s+clients\s+3\s+0\s+\d+s ago\s+\d+s ago\s+~\d+s\s+since 2026-01-03T00:00:00Z$/m)
    expect(r.stdout).toMatch(/^jobs\s+jobs\s+0\s+0\s+never\s+never\s+\d+s ago: GET \/api\/v1\/jobs answered 403 FORBIDDEN$/m)
    expect(r.stdout).toMatch(/^objects:equipment\s+custom_records\s+2\s+1\s+\d+s ago\s+.*walk under way, since 2026-01-02T10:00:00Z$/m)
    // Each column defined under the table; no undefined "lag", no raw JSON, one duration format.
    for (const column of ['last success', 'swept to end', 'staleness', 'cursor']) expect(r.stdout).toContain(`${column}: `)
    expect(r.stdout).not.toMatch(/\blag\b/)
    expect(r.stdout).not.toMatch(/[{}"]/)
    expect(r.stdout).not.toMatch(/\d s\b/)
    expect(r.stdout).toContain('request budget: 2 of 60')
  })
})
