// SIGTERM in the middle of a slow sweep: a clean exit, and the next start goes on from the
// checkpoint the interrupted run committed instead of starting over.
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, query, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'

test('SIGTERM mid-sweep exits 0; the next start resumes from the checkpoint', async () => {
  const emu = await emulatorEnv({ counts: { clients: 40, jobs: 3, visitsPerJob: 1, invoices: 2, customRecords: 0 } })
  const dir = tempDir()
  const env = daemonEnv(emu, dir, await freePort(), {
    streams: ['clients', 'jobs'],
    sync: { pageSize: 5 },
    schedules: idleSchedules(),
  })
  const db = env.FSM_DB!
  await emu.control('POST', '/faults', { route: 'GET /api/v1/*', latencyMs: 200 })
  const first = startRun(env)
  // At least one page of clients is committed with its cursor, and the run goes on.
  await until(
    'a committed page',
    () => query(db, `SELECT cursor FROM sync_state WHERE stream = 'clients' AND cursor IS NOT NULL`).length === 1,
  )
  first.child.kill('SIGTERM')
  expect(await first.exited, first.output()).toEqual({ code: 0, signal: null })

  const runs = query(db, `SELECT kind, stream, outcome, rows, requests FROM sync_runs WHERE stream = 'clients' ORDER BY id`)
  expect(runs).toHaveLength(1)
  expect(runs[0]).toMatchObject({ kind: 'sweep', stream: 'clients' })
  // Stopped on purpose: recorded as interrupted, not as an error of the stream.
  expect(runs[0]!.outcome).toBe('interrupted')
  expect(query(db, `SELECT last_error FROM sync_state WHERE stream = 'clients'`)[0]!.last_error).toBeNull()
  const kept = query(db, `SELECT count(*) AS n FROM clients`)[0]!.n as number
  expect(kept).toBeGreaterThan(0)
  expect(kept).toBeLessThan(40)
  // The interrupted run records what it really did: every committed row, and at least a request per page.
  expect(runs[0]!.rows).toBe(kept)
  expect(runs[0]!.requests as number).toBeGreaterThanOrEqual(Math.ceil(kept / 5))

  await emu.control('POST', '/faults', { clear: true })
  await emu.control('POST', '/requests/clear')
  const second = startRun(env)
  await until('the resumed sweep', () => query(db, `SELECT 1 FROM sync_runs WHERE stream = 'clients' AND outcome = 'success'`).length === 1)
  second.child.kill('SIGTERM')
  expect(await second.exited, second.output()).toEqual({ code: 0, signal: null })

  expect(query(db, `SELECT count(*) AS n FROM clients WHERE deleted_at IS NULL`)).toEqual([{ n: 40 }])
  const log = (await emu.control('GET', '/requests?path=/api/v1/clients')) as { query: unknown }[]
  // Not a backfill from the start: the first list request already carries the stored cursor.
  expect(JSON.stringify(log[0]?.query)).toContain('since')
  const rows = query(db, `SELECT rows FROM sync_runs WHERE stream = 'clients' AND outcome = 'success'`)[0]!.rows as number
  expect(rows).toBeLessThan(40)
}, 60_000)
