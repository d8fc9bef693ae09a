// Schedules switched off ("off", from the config file and from FSM_SCHEDULE_*): the daemon logs
// them, /readyz lists them, and a switched-off sweep does not even run at start.
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { NEVER, daemonEnv, freePort, get, query, startRun, until } from '../../support/daemon-env.js'

test('"off" schedules are logged, shown by /readyz and never run', async () => {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const dir = tempDir()
  const port = await freePort()
  const env = daemonEnv(
    emu,
    dir,
    port,
    { schedules: { sweep: 'off', reconcile: 'off', reference: NEVER, calendarA: NEVER, calendarB: NEVER, accounting: NEVER } },
    { FSM_SCHEDULE_DELIVERIES: 'off', FSM_LOG_LEVEL: 'info' },
  )
  const run = startRun(env)
  const ready = await until('/readyz 200', async () => {
    const r = await get(`http://127.0.0.1:${port}/readyz`)
    return r.status === 200
      ? (JSON.parse(r.text) as { off: string[]; next: Record<string, string | null>; accounts: Record<string, unknown> })
      : undefined
  })
  expect(ready.off).toEqual(['sweep', 'reconcile', 'deliveries'])
  expect(ready.next).toMatchObject({ sweep: 'off', reconcile: 'off', deliveries: 'off' })
  expect(ready.next.reference).toMatch(/^\d{4}-\d\d-\d\dT/)
  // Each account's readiness by id; today's one account is "default", its answer also at the top.
  expect(Object.keys(ready.accounts)).toEqual(['default'])
  expect(ready.accounts.default).toMatchObject({ ready: true, off: ready.off, next: ready.next })
  await until('the log line', () => run.output().includes('schedules switched off'))
  const line = run
    .output()
    .split('\n')
    .find((l) => l.includes('schedules switched off'))
  expect(JSON.parse(line!)).toMatchObject({ off: ['sweep', 'reconcile', 'deliveries'], account: 'default' })
  run.child.kill('SIGTERM')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
  // No sweep at start: the sweep schedule is off. Reference data, which the new mirror lacks, is
  // read at start because its schedule is on; nothing else ran.
  expect(query(env.FSM_DB!, `SELECT count(*) AS n FROM sync_runs WHERE kind <> 'reference'`)).toEqual([{ n: 0 }])
}, 60_000)

test('the scheduled calendar-a job triggers, reads the status, then stores the change feed', async () => {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const dir = tempDir()
  const env = daemonEnv(emu, dir, await freePort(), {
    schedules: {
      sweep: 'off',
      reconcile: 'off',
      reference: 'off',
      calendarA: '* * * * * *',
      calendarB: 'off',
      accounting: 'off',
      deliveries: 'off',
    },
  })
  const db = env.FSM_DB!
  const run = startRun(env)
  await until(
    'a change-feed read after a trigger',
    () => query(db, `SELECT 1 FROM sync_runs WHERE stream = 'calendar_changes' AND outcome = 'success'`).length > 0,
  )
  run.child.kill('SIGTERM')
  expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
  const first = query(db, `SELECT kind, stream FROM sync_runs ORDER BY id LIMIT 2`)
  expect(first).toEqual([
    { kind: 'trigger', stream: 'calendar-a' },
    { kind: 'sweep', stream: 'calendar_changes' },
  ])
  expect(query(db, `SELECT name, connected FROM integration_status`)).toEqual([{ name: 'calendar-a', connected: 1 }])
  expect(query(db, `SELECT cursor FROM sync_state WHERE stream = 'calendar_changes'`)[0]?.cursor).toMatch(/"since":"\d{4}-/)
}, 60_000)
