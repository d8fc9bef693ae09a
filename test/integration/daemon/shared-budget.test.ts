// Processes on one key share one budget: the daemon sweeping, a cron `reconcile` and a `sync`, all
// on the same mirror, together never start more than FSM_RATE_LIMIT requests in any 60 s window,
// counted where the upstream sees them (the emulator's request log).
import { expect, test } from 'vitest'
import { maxInWindow } from '../../../bench/lib.js'
import { openMirror } from '../../../src/store/mirror-database.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { spawnCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { NEVER, daemonEnv, freePort, startRun, until } from './daemon-env.js'

const LIMIT = 6
/**
 * How long the three share the key after the first request. Each paces itself at one start per
 * 10 s (60 s / LIMIT), so three independent budgets pass LIMIT after about 20 s.
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
      schedules: { sweep: NEVER, reference: NEVER, reconcile: NEVER, calendarA: NEVER, calendarB: NEVER, accounting: NEVER, deliveries: NEVER },
    },
    { FSM_RATE_LIMIT: String(LIMIT) },
  )
  // The mirror exists before the three start, so they do not race to create it.
  await (await openMirror(env.FSM_DB!)).close()

  // Each process reads its own stream, so the log tells them apart.
  const daemon = startRun(env)
  const reconcile = spawnCli(['reconcile', '--stream', 'clients'], env)
  const sync = spawnCli(['sync', '--stream', 'jobs'], env)
  type Entry = { path: string; startedAt: string }
  const log = async () => ((await emu.control('GET', '/requests')) as Entry[]).filter((e) => e.path.startsWith('/api/'))
  try {
    const first = await until('a request from each of the three processes', async () => {
      const entries = await log()
      const paths = ['/api/v1/invoices', '/api/v1/clients', '/api/v1/jobs']
      return paths.every((p) => entries.some((e) => e.path === p)) ? Math.min(...entries.map((e) => Date.parse(e.startedAt))) : undefined
    }, 60_000)
    // Observe the shared key; an over-spend ends the wait as soon as it happens.
    await until('the observed spell, or an over-spend', async () => {
      const entries = await log()
      return entries.length > LIMIT || Date.now() - first >= OBSERVE_MS
    }, OBSERVE_MS + 10_000)
  } finally {
    daemon.child.kill('SIGKILL')
    reconcile.kill('SIGKILL')
    sync.kill('SIGKILL')
  }
  const entries = await log()
  const starts = entries.map((e) => Date.parse(e.startedAt))
  expect(maxInWindow(starts, 60_000), JSON.stringify(entries.map((e) => [e.path, e.startedAt]))).toBeLessThanOrEqual(LIMIT)
  // The three shared it: each got some of the budget, and the budget was used.
  expect(new Set(entries.map((e) => e.path)).size).toBe(3)
  expect(entries).toHaveLength(LIMIT)
}, 120_000)
