// Exactly once across kills: `fsm-sync run` with a destination is killed with SIGKILL at arbitrary
// moments (during the initial load, between and inside batches) while the account churns; each start
// goes on from the cursor committed with the last batch, and the replica ends exact, change_log
// included (no change lost, none applied out of place). Then `fsm-sync replicate` finds nothing
// left to do.
import path from 'node:path'
import Database from 'better-sqlite3'
import { expect, inject, test } from 'vitest'
import { destinationTables } from '../../../src/destination/index.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, query, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'

async function cursor(url: string): Promise<number> {
  try {
    const rows = await pgQuery<{ seq: string }>(url, `SELECT seq FROM fsm._fsm_sync_state`)
    return rows[0] === undefined ? -1 : Number(rows[0].seq)
  } catch {
    return -1
  }
}

test('SIGKILL at any moment: the next start goes on from the cursor and the replica ends exact', async () => {
  const emu = await emulatorEnv({ counts: { clients: 40, jobs: 150, visitsPerJob: 1, invoices: 40, customRecords: 20 } })
  const url = await createDatabase(inject('postgresUrl'))
  const dir = tempDir()
  const db = path.join(dir, 'mirror.db')
  const schedules = idleSchedules({ sweep: '*/1 * * * * *' })
  const env = daemonEnv(emu, dir, await freePort(), { schedules }, { FSM_POSTGRES_URL: url })
  const lastSeq = () => (query(db, `SELECT coalesce(max(seq), 0) AS n FROM change_log`)[0]?.n as number | undefined) ?? 0

  await emu.control('POST', '/churn', { ratePerSecond: 80, mix: { apiShare: 0 } })
  let previous = -1
  for (let round = 0; round < 3; round++) {
    const run = startRun(env)
    // Round 0 is killed as soon as the mirror has rows (the load may be under way); later rounds once
    // the destination has moved on, at a moment that falls inside a batch as often as between two.
    if (round === 0) await until('the first rows', () => lastSeq() > 0)
    else await until('progress past the last kill', async () => (await cursor(url)) > previous)
    await new Promise((r) => setTimeout(r, 37 * round))
    run.child.kill('SIGKILL')
    expect((await run.exited).signal).toBe('SIGKILL')
    previous = await cursor(url)
  }
  await emu.control('POST', '/churn', { ratePerSecond: 0 })

  // One more start with the account quiet: it catches up and stops cleanly.
  const since = new Date().toISOString()
  const last = startRun(env)
  await until('a sweep after the churn', () => query(db, `SELECT 1 FROM sync_runs WHERE ended_at > ?`, since).length > 0)
  await until('caught up', async () => (await cursor(url)) === lastSeq(), 30_000)
  last.child.kill('SIGTERM')
  expect((await last.exited).code).toBe(0)

  const replicate = await runCli(['replicate', '--json'], env)
  expect(replicate.stderr).toBe('')
  expect(replicate.code).toBe(0)
  const summary = JSON.parse(replicate.stdout) as { loaded: string | null; changesApplied: number; lagChanges: number }
  expect(summary).toMatchObject({ loaded: null, changesApplied: 0, lagChanges: 0 })

  const mirror = new Database(db, { readonly: true })
  try {
    const tables = destinationTables()
    expect(tables.length).toBeGreaterThan(10)
    expect(await comparePostgres(mirror, url, 'fsm', tables)).toEqual([])
  } finally {
    mirror.close()
    await emu.close()
  }
}, 90_000)
