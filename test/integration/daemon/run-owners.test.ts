// A command started beside a live daemon (a cron `reconcile` on the same mirror) must not mark the
// daemon's running runs interrupted; once the daemon is gone, the next command does.
import { describe, expect, test } from 'vitest'
import path from 'node:path'
import { Writable } from 'node:stream'
import Database from 'better-sqlite3'
import { RunOwnership } from '../../../src/daemon/run-ownership.js'
import { createLogger } from '../../../src/log/logger.js'
import { systemClock, type Clock } from '../../../src/model/clock.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { FakeClock } from '../../support/fake-clock.js'
import { runCli } from '../../support/run-cli.js'
import { tempDir, tempMirror } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, query, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'

const quiet = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

describe('runs of live processes', () => {
  test("a reconcile started beside a running daemon leaves the daemon's running sweep alone; after a SIGKILL of the daemon it is interrupted", async () => {
    const emu = await emulatorEnv({ counts: { clients: 10, jobs: 5, visitsPerJob: 1, invoices: 2, customRecords: 0 } })
    const dir = tempDir()
    const env = daemonEnv(emu, dir, await freePort(), {
      streams: ['clients', 'jobs'],
      // Continuous sweeps open a stream's run before its first request (a batch reads every stream's
      // first page before it opens their runs), so the hanging jobs list leaves a `running` run.
      schedules: idleSchedules({ sweep: 'continuous' }),
    })
    const db = env.FSM_DB!
    // The daemon's jobs sweep hangs on the jobs list, so its jobs run stays `running`.
    await emu.control('POST', '/faults', { route: 'GET /api/v1/jobs*', latencyMs: 120_000 })
    const daemon = startRun(env)
    try {
      const running = await until(
        "the daemon's jobs sweep running",
        () => query(db, `SELECT id FROM sync_runs WHERE stream = 'jobs' AND outcome = 'running'`)[0]?.id,
      )

      const beside = await runCli(['reconcile', '--stream', 'clients'], env)
      expect(beside.code, beside.stderr).toBe(0)
      expect(query(db, `SELECT outcome FROM sync_runs WHERE stream = 'clients' AND kind = 'reconcile'`)).toEqual([{ outcome: 'success' }])
      expect(query(db, `SELECT outcome FROM sync_runs WHERE id = ?`, running)).toEqual([{ outcome: 'running' }])

      daemon.child.kill('SIGKILL')
      await daemon.exited
      const after = await runCli(['reconcile', '--stream', 'clients'], env)
      expect(after.code, after.stderr).toBe(0)
      expect(query(db, `SELECT outcome FROM sync_runs WHERE id = ?`, running)).toEqual([{ outcome: 'interrupted' }])
    } finally {
      daemon.child.kill('SIGKILL')
      await emu.control('POST', '/faults', { clear: true })
    }
  }, 60_000)

  test("another host's runs are left alone while it keeps beating, and abandoned once its heartbeat is older than the bound", async () => {
    const m = await tempMirror()
    try {
      const clock = new FakeClock(Date.parse('2026-06-01T12:00:00.000Z'))
      // Two other hosts on one volume: one keeps beating every 10 s, one stops (its container died).
      // The same pid everywhere: pids mean nothing across hosts.
      const identity = (host: string) => ({ pid: 7, host, pidNamespace: 'pid:[1]' })
      const beating = new RunOwnership(m.sqlite, quiet(), { clock, identity: identity('host-b'), heartbeatMs: 10_000 })
      const silent = new RunOwnership(m.sqlite, quiet(), { clock, identity: identity('host-c'), heartbeatMs: 3_600_000 })
      const runOf = (o: RunOwnership) =>
        new SyncStateStore(m.sqlite, { ownerId: o.id }).startRun('sweep', 'jobs', new Date(clock.now()).toISOString())
      const beatingRun = runOf(beating)
      const silentRun = runOf(silent)
      const outcome = (id: number) => m.sqlite.prepare(`SELECT outcome FROM sync_runs WHERE id = ?`).pluck().get(id)
      const here = { clock, identity: identity('host-a'), pidExists: () => false, heartbeatMs: 3_600_000 }
      const startHere = () => {
        const o = new RunOwnership(m.sqlite, quiet(), here)
        const abandoned = o.abandonGone(new SyncStateStore(m.sqlite, { ownerId: o.id }))
        o.close()
        return abandoned
      }

      await clock.advance(30_000)
      expect(startHere().runs).toBe(0)
      expect([outcome(beatingRun), outcome(silentRun)]).toEqual(['running', 'running'])

      await clock.advance(60_000)
      expect(startHere()).toEqual({ runs: 1, owners: [{ id: silent.id, pid: 7, host: 'host-c', reason: 'no heartbeat for 90 s' }] })
      expect([outcome(beatingRun), outcome(silentRun)]).toEqual(['running', 'interrupted'])
      // One row per live process, refreshed in place: the heartbeat writes no row per run.
      expect(m.sqlite.prepare(`SELECT host, heartbeat_at FROM run_owners ORDER BY id`).all()).toEqual([
        { host: 'host-b', heartbeat_at: new Date(clock.now()).toISOString() },
      ])
      beating.close()
      silent.close()
      expect(clock.pending).toBe(0)
    } finally {
      await m.dispose()
    }
  })

  test('a process that registers and starts a run while another one starts up keeps its run running', async () => {
    const m = await tempMirror()
    // A second process on the mirror, as its own connection; it never waits for a lock.
    const other = new Database(path.join(m.dir, 'mirror.db'))
    other.pragma('busy_timeout = 0')
    try {
      // The starting process's clock is read once between its constructor and its look at the
      // runs: the other process registers and starts its run at that moment.
      let between: (() => void) | undefined
      const clock: Clock = {
        ...systemClock,
        now: () => {
          const step = between
          between = undefined
          step?.()
          return systemClock.now()
        },
      }
      const starting = new RunOwnership(m.sqlite, quiet(), { clock, pidExists: () => true })
      let otherOwner: RunOwnership | undefined
      let otherRun = 0
      between = () => {
        otherOwner = new RunOwnership(other, quiet(), { identity: { pid: 7, host: 'host-b', pidNamespace: 'pid:[1]' } })
        otherRun = new SyncStateStore(other, { ownerId: otherOwner.id }).startRun('sweep', 'jobs', new Date().toISOString())
      }
      const abandoned = starting.abandonGone(new SyncStateStore(m.sqlite, { ownerId: starting.id }))
      expect(otherRun).toBeGreaterThan(0)
      expect(abandoned).toEqual({ runs: 0, owners: [] })
      expect(m.sqlite.prepare(`SELECT outcome FROM sync_runs WHERE id = ?`).pluck().get(otherRun)).toBe('running')
      otherOwner?.close()
      starting.close()
    } finally {
      other.close()
      await m.dispose()
    }
  })
})
