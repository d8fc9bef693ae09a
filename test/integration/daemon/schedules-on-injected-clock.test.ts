// The daemon on the FakeClock: `startDaemon(config, { logger, clock })` hands the one clock to the
// app, so a schedule fires when the fake time passes its next run, the run is stamped with that
// time, and stop leaves nothing armed on the clock (docs/architecture.md, Time).
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { createLogger } from '../../../src/log/logger.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { FakeClock } from '../../support/fake-clock.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { until } from '../../support/daemon-env.js'

test('a schedule fires when the fake clock passes its next run; stop disarms every timer of the clock', async () => {
  const emu = await emulatorEnv({ counts: { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const config = inProcessDaemonConfig(emu, { streams: ['clients'] })
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 3))
  const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
  const daemon = await startDaemon({ ...config, schedules: { ...config.schedules, sweep: '*/10 * * * *' } }, { logger, clock })
  const runs = () =>
    daemon.app.mirror.sqlite.prepare(`SELECT started_at AS at, outcome FROM sync_runs WHERE stream = 'clients' ORDER BY id`).all()
  try {
    expect(daemon.app.clock).toBe(clock)
    await daemon.firstSweep
    expect(runs()).toEqual([{ at: '2025-01-01T12:03:00.000Z', outcome: 'success' }])
    expect(daemon.scheduler.nextRuns().sweep).toBe('2025-01-01T12:10:00.000Z')

    await clock.advance(7 * 60_000 - 1)
    expect(runs()).toHaveLength(1)
    await clock.advance(1)
    await until('the scheduled sweep', () => runs().length === 2 && daemon.scheduler.busy().length === 0)
    expect(runs()[1]).toEqual({ at: '2025-01-01T12:10:00.000Z', outcome: 'success' })
    expect(daemon.scheduler.nextRuns().sweep).toBe('2025-01-01T12:20:00.000Z')
    // The sweep's next tick and this process's run heartbeat wait on the clock.
    expect(clock.pending).toBeGreaterThanOrEqual(2)
  } finally {
    await daemon.stop()
  }
  // Schedules, run heartbeats and back-offs alike: nothing is left to fire.
  expect(clock.pending).toBe(0)
  expect(daemon.scheduler.nextRuns().sweep).toBeNull()
})
