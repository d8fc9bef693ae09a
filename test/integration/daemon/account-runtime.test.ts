// An account runtime (src/daemon/account-runtime.ts) started on its own, without the daemon's
// listener: it sweeps its account into its mirror and stops leaving nothing behind; two of them
// in one process, each with its own mirror and key, keep two accounts apart; a mirror the
// checkpoint thread held past the stop is closed once the thread lets go.
import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { startAccountRuntime, type AccountRuntime } from '../../../src/daemon/account-runtime.js'
import { createLogger } from '../../../src/log/logger.js'
import { startCheckpointService } from '../../../src/store/sqlite/background-checkpoints.js'
import type { AccountHandle } from '../../../emulator/index.js'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { FakeClock } from '../../support/fake-clock.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { until } from '../../support/daemon-env.js'
import { tempMirror } from '../../support/temp-mirror.js'

// On the FakeClock one stream (the sweep paces between streams on the clock); on the system clock all four.
const STREAMS = ['clients']
const EVERY = ['clients', 'jobs', 'visits', 'invoices']
const counts = { clients: 3, jobs: 2, visitsPerJob: 1, invoices: 2, customRecords: 0 }

function capture() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write: (chunk: Buffer, _e, cb) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, logger: createLogger({ level: 'info', destination }) }
}

/** The mirror of `runtime` against the emulator's record of `account`. */
function compare(runtime: AccountRuntime, account: AccountHandle, streams = STREAMS) {
  return compareMirror(
    (resource) => account.control<Record<string, unknown>[]>('GET', `/state/${resource}`),
    (sql, ...params) => runtime.app.mirror.sqlite.prepare(sql).all(...params) as Record<string, unknown>[],
    [],
    RECORD_STREAMS.filter((s) => streams.includes(s.name)),
  )
}

test('an account runtime sweeps its account on its own and stops with nothing left armed or registered', async () => {
  const emu = await emulatorEnv({ counts })
  const { lines, logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 3))
  const checkpoints = startCheckpointService({ logger })
  const config = inProcessDaemonConfig(emu, { streams: STREAMS })
  const runtime = await startAccountRuntime(
    { ...config, schedules: { ...config.schedules, sweep: '*/10 * * * *' } },
    { logger, clock, checkpoints },
  )
  try {
    expect(runtime.id).toBe('default')
    await runtime.firstSweep
    expect((await compare(runtime, emu.accounts[0]!)).mismatches).toEqual([])
    expect(await runtime.ready()).toMatchObject({ ready: true })
    expect(runtime.status()).toMatchObject({ id: 'default', running: [], next: { sweep: '2025-01-01T12:10:00.000Z' } })
    expect(checkpoints.mirrors).toBe(1)
    expect(runtime.checkpoints.running).toBe(true)
    expect(clock.pending).toBeGreaterThan(0)
  } finally {
    await runtime.stop()
  }
  // The schedules, heartbeats and back-offs are disarmed, the mirror given back and closed.
  expect(clock.pending).toBe(0)
  expect(checkpoints.mirrors).toBe(0)
  expect(runtime.checkpoints.running).toBe(false)
  expect(runtime.app.mirror.sqlite.open).toBe(false)
  expect(runtime.stuck()).toBe(false)
  await checkpoints.stop()
  // Every line the account logged names it.
  expect(lines.length).toBeGreaterThan(0)
  expect(lines.filter((l) => l.account !== 'default')).toEqual([])
})

test('two runtimes in one process keep two accounts, each in its own mirror', async () => {
  const emu = await emulatorEnv({ accounts: 2, counts })
  const { lines, logger } = capture()
  const checkpoints = startCheckpointService({ logger })
  const runtimes = await Promise.all(
    emu.accounts.map((account) => {
      const config = inProcessDaemonConfig(account, { streams: EVERY })
      return startAccountRuntime(
        { ...config, schedules: { ...config.schedules, sweep: '*/10 * * * *' } },
        { logger, checkpoints, id: account.id },
      )
    }),
  )
  try {
    await Promise.all(runtimes.map((r) => r.firstSweep))
    expect(checkpoints.mirrors).toBe(2)
    for (const [i, runtime] of runtimes.entries()) {
      const own = await compare(runtime, emu.accounts[i]!, EVERY)
      expect(own.mismatches).toEqual([])
      expect(own.compared.clients).toBe(3)
      // The other account's records are not in this mirror: the comparison is not trivially empty.
      expect((await compare(runtime, emu.accounts[1 - i]!, EVERY)).mismatches.length).toBeGreaterThan(0)
    }
    expect(runtimes.map((r) => r.id)).toEqual(['acct-001', 'acct-002'])
  } finally {
    await Promise.all(runtimes.map((r) => r.stop()))
  }
  expect(checkpoints.mirrors).toBe(0)
  await checkpoints.stop()
  // Each account's lines carry its own id.
  expect(new Set(lines.map((l) => l.account))).toEqual(new Set(['acct-001', 'acct-002']))
})

test('a daemon that cannot listen stops the account it opened: nothing armed, nothing left running', async () => {
  const emu = await emulatorEnv({ counts })
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  const port = (taken.address() as { port: number }).port
  const { logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 3))
  const config = inProcessDaemonConfig(emu, { streams: STREAMS })
  try {
    await expect(startDaemon({ ...config, httpPort: port }, { logger, clock })).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+/)
  } finally {
    taken.close()
  }
  // The run heartbeat of the account's app is disarmed with it.
  expect(clock.pending).toBe(0)
})

test('a mirror the checkpoint thread held past the stop wait is closed once the thread lets go, and the runtime is no longer stuck', async () => {
  const emu = await emulatorEnv({ counts })
  const { logger } = capture()
  const checkpoints = startCheckpointService({ logger, stopTimeoutMs: 50 })
  // Another mirror, held by a connection in exclusive locking mode: the thread's open of it waits
  // in SQLite's busy handler (2 s), and the thread answers nothing meanwhile (a pass stuck on a disk).
  const blocker = await tempMirror()
  blocker.sqlite.pragma('locking_mode = EXCLUSIVE')
  blocker.sqlite.exec('CREATE TABLE held (x); INSERT INTO held VALUES (1)')
  const config = inProcessDaemonConfig(emu, { streams: STREAMS })
  const runtime = await startAccountRuntime(config, { logger, checkpoints })
  try {
    checkpoints.register(blocker.sqlite, { logger })
    await runtime.stop()
    // Left open while the thread holds it: a SIGTERM now would end the process with SIGKILL.
    expect(runtime.stuck()).toBe(true)
    expect(runtime.app.mirror.sqlite.open).toBe(true)
    await runtime.checkpoints.released()
    await until('the mirror closed', () => !runtime.app.mirror.sqlite.open)
    expect(runtime.stuck()).toBe(false)
  } finally {
    await checkpoints.stop()
    await blocker.dispose()
  }
})
