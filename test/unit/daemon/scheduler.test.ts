// Overlap protection of the daemon's schedules and the record serialQueue, driven by hand, and the
// schedules themselves driven by the FakeClock (no real timers, no waiting).
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { CHECK_EVERY_MS, Scheduler, SPREAD_MAX_MS, spreadOffsetMs } from '../../../src/daemon/scheduler.js'
import { SerialQueue } from '../../../src/daemon/sync-jobs.js'
import { FakeClock } from '../../support/fake-clock.js'

function capture() {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString('utf8')) as Record<string, unknown>), cb()),
    }),
  })
  return { lines, logger }
}

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => (open = r))
  return { open, opened }
}

test('a tick while the job runs is skipped and logged, not queued', async () => {
  const { lines, logger } = capture()
  const g = gate()
  let runs = 0
  const s = new Scheduler([{ name: 'sweep', cron: '0 0 1 1 *', run: async () => (runs++, await g.opened) }], logger)
  s.start()
  const first = s.runNow('sweep')
  expect(s.busy()).toEqual(['sweep'])
  expect(await s.runNow('sweep')).toBe(false)
  expect(await s.runNow('sweep')).toBe(false)
  g.open()
  expect(await first).toBe(true)
  expect(runs).toBe(1)
  expect(lines.filter((l) => l.msg === 'scheduled job still running from an earlier tick: this tick is skipped')).toHaveLength(2)
  expect(await s.runNow('sweep')).toBe(true)
  expect(runs).toBe(2)
  await s.stop()
})

test('a failed job is logged once and not retried', async () => {
  const { lines, logger } = capture()
  let runs = 0
  const s = new Scheduler(
    [{ name: 'calendar-a', cron: '0 0 1 1 *', run: () => (runs++, Promise.reject(new Error('INTEGRATION_NOT_CONNECTED'))) }],
    logger,
  )
  s.start()
  expect(await s.runNow('calendar-a')).toBe(true)
  expect(runs).toBe(1)
  expect(lines.filter((l) => l.msg === 'scheduled job failed; it runs again at its next tick')).toHaveLength(1)
  await s.stop()
})

test('stop aborts the running job and waits for it; nothing runs afterwards', async () => {
  const { logger } = capture()
  let sawAbort = false
  const s = new Scheduler(
    [
      {
        name: 'sweep',
        cron: '0 0 1 1 *',
        run: (signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => ((sawAbort = true), resolve()))),
      },
    ],
    logger,
  )
  s.start()
  expect(s.active).toBe(true)
  const running = s.runNow('sweep')
  await s.stop()
  expect(sawAbort).toBe(true)
  expect(await running).toBe(true)
  expect(s.active).toBe(false)
  expect(await s.runNow('sweep')).toBe(false)
})

test('the serialQueue runs work one at a time, in order, and survives a failure', async () => {
  const serialQueue = new SerialQueue()
  const order: string[] = []
  const g = gate()
  const a = serialQueue.run(async () => (order.push('a start'), await g.opened, order.push('a end')))
  const b = serialQueue.run(() => Promise.reject(new Error('b failed')))
  const c = serialQueue.run(() => Promise.resolve(order.push('c')))
  g.open()
  await a
  await expect(b).rejects.toThrow('b failed')
  await c
  expect(order).toEqual(['a start', 'a end', 'c'])
})

test('a schedule fires when the clock passes its next run, once per tick, and stop cancels it', async () => {
  const { logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 0, 5))
  const at: string[] = []
  const s = new Scheduler(
    [{ name: 'sweep', cron: '*/15 * * * * *', run: () => (at.push(new Date(clock.now()).toISOString()), Promise.resolve()) }],
    logger,
    clock,
  )
  expect(s.nextRuns()).toEqual({ sweep: null })
  s.start()
  expect(s.nextRuns()).toEqual({ sweep: '2025-01-01T12:00:15.000Z' })
  await clock.advance(9_999)
  expect(at).toEqual([])
  await clock.advance(1)
  expect(at).toEqual(['2025-01-01T12:00:15.000Z'])
  expect(s.nextRuns()).toEqual({ sweep: '2025-01-01T12:00:30.000Z' })
  await clock.advance(30_000)
  expect(at).toEqual(['2025-01-01T12:00:15.000Z', '2025-01-01T12:00:30.000Z', '2025-01-01T12:00:45.000Z'])
  expect(clock.pending).toBe(1)
  await s.stop()
  expect(clock.pending).toBe(0)
  expect(s.nextRuns()).toEqual({ sweep: null })
  await clock.advance(3_600_000)
  expect(at).toHaveLength(3)
})

test('a tick that comes while the job still runs is skipped; the schedule goes on', async () => {
  const { lines, logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 0, 0))
  const g = gate()
  let runs = 0
  const s = new Scheduler([{ name: 'sweep', cron: '* * * * *', run: async () => (runs++, await g.opened) }], logger, clock)
  s.start()
  await clock.advance(60_000)
  expect(s.busy()).toEqual(['sweep'])
  await clock.advance(60_000)
  expect(runs).toBe(1)
  expect(lines.filter((l) => l.msg === 'scheduled job still running from an earlier tick: this tick is skipped')).toHaveLength(1)
  g.open()
  await clock.advance(60_000)
  expect(runs).toBe(2)
  await s.stop()
})

test('a run further away than one timer can wait fires at its time, in the host zone', async () => {
  const { logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1))
  const at: string[] = []
  const s = new Scheduler(
    [{ name: 'reconcile', cron: '30 2 1 7 *', run: () => (at.push(new Date(clock.now()).toISOString()), Promise.resolve()) }],
    logger,
    clock,
  )
  s.start()
  // 02:30 on 1 July in America/New_York (summer time, UTC-4), the zone the suite runs in.
  expect(s.nextRuns()).toEqual({ reconcile: '2025-07-01T06:30:00.000Z' })
  // Further than a Node timer can wait (2^31-1 ms, about 24.8 days).
  expect(Date.UTC(2025, 6, 1, 6, 30) - clock.now()).toBeGreaterThan(2 ** 31 - 1)
  await clock.advance(Date.UTC(2025, 6, 1, 6, 29) - clock.now())
  expect(at).toEqual([])
  await clock.advance(120_000)
  expect(at).toEqual(['2025-07-01T06:30:00.000Z'])
  expect(s.nextRuns()).toEqual({ reconcile: '2026-07-01T06:30:00.000Z' })
  await s.stop()
})

test('a host suspend (the wall clock jumps past the planned time, timers do not notice): the job runs at the next check, not hours late', async () => {
  const { logger } = capture()
  // 22:00 in America/New_York, the zone the suite runs in; the job is planned for 03:00.
  const clock = new FakeClock(Date.UTC(2025, 0, 16, 3, 0))
  const at: number[] = []
  const s = new Scheduler([{ name: 'nightly', cron: '0 3 * * *', run: () => (at.push(clock.now()), Promise.resolve()) }], logger, clock)
  s.start()
  expect(s.nextRuns()).toEqual({ nightly: '2025-01-16T08:00:00.000Z' })
  await clock.advance(60 * 60_000)
  // 23:00: the host sleeps for five hours. Timers keep what they had left (at most one check).
  clock.jump(5 * 60 * 60_000)
  const woke = clock.now()
  expect(at).toEqual([])
  await clock.advance(CHECK_EVERY_MS)
  // It woke at 04:00; one long timer armed at 22:00 would have waited until 08:00.
  expect(at).toHaveLength(1)
  expect(at[0]! - woke).toBeLessThanOrEqual(CHECK_EVERY_MS)
  // The next run is the next day's 03:00, not a second run for the night that was slept through.
  expect(s.nextRuns()).toEqual({ nightly: '2025-01-17T08:00:00.000Z' })
  await s.stop()
})

test('spread jobs: two accounts run the hourly reference read apart, each once an hour, at a stable offset', async () => {
  const { logger } = capture()
  const clock = new FakeClock(Date.UTC(2025, 0, 1, 12, 0, 0))
  const at = new Map<string, number[]>([
    ['acct-a', []],
    ['acct-b', []],
  ])
  const schedulers = [...at].map(
    ([id, runs]) =>
      new Scheduler(
        [
          {
            name: 'reference',
            cron: '7 * * * *',
            offsetMs: spreadOffsetMs(id, '7 * * * *', clock.now()),
            run: () => (runs.push(clock.now()), Promise.resolve()),
          },
        ],
        logger,
        clock,
      ),
  )
  for (const s of schedulers) s.start()
  await clock.advance(5 * 3_600_000)
  const [a, b] = [at.get('acct-a')!, at.get('acct-b')!]
  for (const runs of [a, b]) {
    expect(runs).toHaveLength(5)
    // Once an hour, at the same minute and second of each hour.
    for (let i = 1; i < runs.length; i++) expect(runs[i]! - runs[i - 1]!).toBe(3_600_000)
  }
  expect(a[0]).not.toBe(b[0])
  // Each within the hour after its pattern's tick, and the same offset on a later start.
  for (const [id, runs] of at) {
    const offset = spreadOffsetMs(id, '7 * * * *', Date.UTC(2025, 3, 9, 17, 31))
    expect(offset).toBe(spreadOffsetMs(id, '7 * * * *', clock.now()))
    expect(offset).toBeLessThan(SPREAD_MAX_MS)
    expect(runs[0]).toBe(Date.UTC(2025, 0, 1, 12, 7) + offset)
  }
  // A pattern of every 10 minutes spreads within its 10 minutes; "off" has none.
  expect(spreadOffsetMs('acct-a', '*/10 * * * *', clock.now())).toBeLessThan(600_000)
  expect(spreadOffsetMs('acct-a', 'off', clock.now())).toBe(0)
  for (const s of schedulers) await s.stop()
})
