// `fsm-sync trigger`: one POST, recorded in sync_runs; a disconnected integration is one clear
// failure and exactly one request.
import path from 'node:path'
import { expect, test } from 'vitest'
import { emulatorEnv, type EmulatorEnv } from '../../helpers/emulator-env.js'
import { cleanEnv, runCli } from '../../helpers/run-cli.js'
import { tempDir } from '../../helpers/temp-mirror.js'
import { query } from './daemon-env.js'

/** A fresh emulator (closed when the test ends) and mirror for one test. */
async function setup(): Promise<{ emu: EmulatorEnv; env: Record<string, string>; db: string }> {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const db = path.join(tempDir(), 'mirror.db')
  return { emu, db, env: cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db }) }
}

test('a connected calendar: the counts are printed and stored as a trigger run', async () => {
  const { env, db } = await setup()
  const r = await runCli(['trigger', 'calendar-a'], env)
  expect(r.code, r.stderr).toBe(0)
  expect(r.stdout).toMatch(/^calendar-a: created \d+, updated \d+, deleted \d+, errors 0$/m)
  const [run] = query(db, `SELECT kind, stream, outcome, requests, details FROM sync_runs`)
  expect(run).toMatchObject({ kind: 'trigger', stream: 'calendar-a', outcome: 'success', requests: 1 })
  expect(Object.keys(JSON.parse(run!.details as string) as object).sort()).toEqual(['created', 'deleted', 'errors', 'updated'])
  // The calendar's status is read after its trigger and stored.
  const [status] = query(db, `SELECT name, connected, last_sync_at, error FROM integration_status`)
  expect(status).toMatchObject({ name: 'calendar-a', connected: 1, error: null })
  expect(status!.last_sync_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

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
