// `fsm-sync trigger`: one POST, recorded in sync_runs; a disconnected integration is one clear
// failure and exactly one request.
import path from 'node:path'
import { expect, test } from 'vitest'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { syncOnce } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { query } from '../../support/daemon-env.js'

/** A fresh emulator (closed when the test ends) and mirror for one test. */
async function setup(): Promise<{ emu: EmulatorEnv; env: Record<string, string>; db: string }> {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const db = path.join(tempDir(), 'mirror.db')
  // `trigger` refuses a mirror nothing was ever synced into (the wrong volume): sync it first.
  await syncOnce(emu, db)
  return { emu, db, env: cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db }) }
}

test('a connected calendar: the counts are printed and stored as a trigger run', async () => {
  const { env, db } = await setup()
  const r = await runCli(['trigger', 'calendar-a'], env)
  expect(r.code, r.stderr).toBe(0)
  expect(r.stdout).toMatch(/^calendar-a: created \d+, updated \d+, deleted \d+, errors 0$/m)
  const [run] = query(db, `SELECT kind, stream, outcome, requests, details FROM sync_runs WHERE kind = 'trigger'`)
  expect(run).toMatchObject({ kind: 'trigger', stream: 'calendar-a', outcome: 'success', requests: 1 })
  expect(Object.keys(JSON.parse(run!.details as string) as object).sort()).toEqual(['created', 'deleted', 'errors', 'updated'])
  // The calendar's status is read after its trigger and stored.
  const [status] = query(db, `SELECT name, connected, last_sync_at, error FROM integration_status`)
  expect(status).toMatchObject({ name: 'calendar-a', connected: 1, error: null })
  expect(status!.last_sync_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

test("calendar-a's change feed is stored after each trigger, paged by next_cursor, resumed from since, never twice", async () => {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 30, visitsPerJob: 2, invoices: 1, customRecords: 0 } })
  const db = path.join(tempDir(), 'mirror.db')
  await syncOnce(emu, db)
  const env = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db })
  const feedRequests = async () =>
    ((await emu.control('GET', '/requests?path=/api/v1/integrations/calendar-a/sync&method=GET')) as { query: string }[]).map(
      (r) => new URLSearchParams(r.query),
    )
  const first = await runCli(['trigger', 'calendar-a'], env)
  expect(first.code, first.stderr).toBe(0)
  expect(first.stdout).toMatch(/^calendar-a change feed: \d+ new change records stored in calendar_changes$/m)
  const before = query(db, `SELECT count(*) AS n FROM calendar_changes`)[0]!.n as number
  expect(query(db, `SELECT cursor FROM sync_state WHERE stream = 'calendar_changes'`)[0]?.cursor).toMatch(/"since":"\d{4}-/)

  // More changes than one page of the feed (50 by default): every visit is edited.
  const visits = (await emu.state('visits')) as { id: string }[]
  expect(visits.length).toBeGreaterThan(50)
  for (const v of visits) expect((await emu.api('PATCH', `/api/v1/visits/${v.id}`, { notes: 'moved in the calendar' })).status).toBe(200)
  await emu.control('POST', '/requests/clear')
  const second = await runCli(['trigger', 'calendar-a'], env)
  expect(second.code, second.stderr).toBe(0)
  const reads = await feedRequests()
  expect(reads.length).toBeGreaterThanOrEqual(2)
  // Resumed from the stored point, then the cursor chain followed.
  expect(reads[0]!.get('since')).toMatch(/^\d{4}-/)
  expect(reads[1]!.get('cursor')).toBeTruthy()
  expect(reads[1]!.get('since')).toBe(reads[0]!.get('since'))
  const stored = query(db, `SELECT visit_id, action, external_event_id, changed_at, raw FROM calendar_changes WHERE visit_id IS NOT NULL`)
  const seen = new Set(stored.map((r) => r.visit_id))
  for (const v of visits) expect(seen.has(v.id), v.id).toBe(true)
  for (const r of stored) {
    expect(['created', 'updated', 'deleted']).toContain(r.action)
    expect(r.external_event_id).toMatch(/^calendar-a_/)
    expect(JSON.parse(r.raw as string)).toMatchObject({ visitId: r.visit_id })
  }
  const after = query(db, `SELECT count(*) AS n FROM calendar_changes`)[0]!.n as number
  expect(after - before).toBeGreaterThanOrEqual(visits.length)
  const [feedRun] = query(db, `SELECT kind, outcome, rows FROM sync_runs WHERE stream = 'calendar_changes' ORDER BY id DESC LIMIT 1`)
  expect(feedRun).toMatchObject({ kind: 'sweep', outcome: 'success', rows: after - before })

  // Nothing new: the overlapping re-read of the last change stores nothing twice.
  const third = await runCli(['trigger', 'calendar-a'], env)
  expect(third.code, third.stderr).toBe(0)
  expect(query(db, `SELECT count(*) AS n FROM calendar_changes`)[0]!.n).toBe(after)
}, 60_000)

test('accounting answers queued', async () => {
  const { env } = await setup()
  const r = await runCli(['trigger', 'accounting'], env)
  expect(r.code, r.stderr).toBe(0)
  expect(r.stdout).toMatch(/^accounting: queued/m)
})

test('a disconnected calendar: exit 1, INTEGRATION_NOT_CONNECTED named once, one request, last_error stored', async () => {
  const { emu, env, db } = await setup()
  await emu.control('POST', '/integrations/calendar-b', { connected: false })
  await emu.control('POST', '/requests/clear')
  const r = await runCli(['trigger', 'calendar-b'], env)
  expect(r.code).toBe(1)
  expect(r.stderr).toMatch(/calendar-b is not connected \(400 INTEGRATION_NOT_CONNECTED/)
  expect((await emu.control('GET', '/requests?path=/api/v1/integrations')) as unknown[]).toHaveLength(1)
  expect(query(db, `SELECT last_error FROM sync_state WHERE stream = 'calendar-b'`)[0]?.last_error).toMatch(/INTEGRATION_NOT_CONNECTED/)
  expect(query(db, `SELECT outcome FROM sync_runs WHERE stream = 'calendar-b'`)).toEqual([{ outcome: 'error' }])
})

test('an unknown integration is a usage error', async () => {
  const { env } = await setup()
  expect((await runCli(['trigger', 'payments'], env)).code).toBe(2)
})
