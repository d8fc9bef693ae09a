// Processes on one key share one budget: the daemon sweeping, a cron `reconcile` and a `sync`, all
// on the same mirror, together never start more than FSM_RATE_LIMIT requests in any 60 s window,
// counted where the upstream sees them (the emulator's request log).
import { expect, test } from 'vitest'
import { maxInWindow } from '../../../bench/lib.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { spawnCli } from '../../support/run-cli.js'
import { syncOnce } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'

const LIMIT = 6
/**
 * How long the three share the key once all of them run. Each paces itself at one start per 10 s
 * (60 s / LIMIT), so three independent budgets pass LIMIT within about 20 s.
 */
const OBSERVE_MS = 22_000

test('the daemon, a reconcile and a sync running at once never start more than FSM_RATE_LIMIT requests in any 60 s window', async () => {
  // Enough rows that none of the three finishes within the observed spell.
  const emu = await emulatorEnv({ seed: 4, counts: { clients: 400, jobs: 400, visitsPerJob: 1, invoices: 400, customRecords: 0 } })
  const dir = tempDir()
  const env = daemonEnv(
    emu,
    dir,
    await freePort(),
    {
      streams: ['invoices'],
      schedules: idleSchedules(),
    },
    { FSM_RATE_LIMIT: String(LIMIT) },
  )
  // The mirror exists before the three start, so they do not race to create it, and it was synced
  // once (one request, in the ledger the three share), as the mirror of a cron `reconcile` is.
  await syncOnce(emu, env.FSM_DB!)

  // Each process reads its own stream, so the log tells them apart.
  const daemon = startRun(env)
  const reconcile = spawnCli(['reconcile', '--stream', 'clients'], env)
  const sync = spawnCli(['sync', '--stream', 'jobs'], env)
  type Entry = { path: string; startedAt: string }
  const log = async () => ((await emu.control('GET', '/requests')) as Entry[]).filter((e) => e.path.startsWith('/api/'))
  try {
    // All three are running once each has registered as a run owner; from then on each of them
    // wants more requests than the key allows, whoever got the first ones.
    await until(
      'the three processes running',
      async () => {
        const mirror = await openMirror(env.FSM_DB!, { readonly: true })
        try {
          return (mirror.sqlite.prepare('SELECT count(*) FROM run_owners').pluck().get() as number) >= 3 ? true : undefined
        } finally {
          await mirror.close()
        }
      },
      90_000,
    )
    const first = Date.now()
    // Observe the shared key; an over-spend ends the wait as soon as it happens.
    await until(
      'the observed spell, or an over-spend',
      async () => {
        const starts = (await log()).map((e) => Date.parse(e.startedAt))
        return maxInWindow(starts, 60_000) > LIMIT || Date.now() - first >= OBSERVE_MS
      },
      OBSERVE_MS + 10_000,
    )
  } finally {
    daemon.child.kill('SIGKILL')
    reconcile.kill('SIGKILL')
    sync.kill('SIGKILL')
  }
  const entries = await log()
  const starts = entries.map((e) => Date.parse(e.startedAt))
  expect(maxInWindow(starts, 60_000), JSON.stringify(entries.map((e) => [e.path, e.startedAt]))).toBeLessThanOrEqual(LIMIT)
  // The budget was used (each process wanted more than it allows). Which process got which start
  // is the governors' business: one that started first may take the whole window.
  expect(maxInWindow(starts, 60_000)).toBe(LIMIT)
}, 150_000)
