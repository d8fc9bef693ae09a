// Overlap protection of the daemon's schedules and the record lane, driven by hand (no timers).
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { Scheduler } from '../../../src/daemon/scheduler.js'
import { Lane } from '../../../src/daemon/sync-jobs.js'

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

test('the lane runs work one at a time, in order, and survives a failure', async () => {
  const lane = new Lane()
  const order: string[] = []
  const g = gate()
  const a = lane.run(async () => (order.push('a start'), await g.opened, order.push('a end')))
  const b = lane.run(() => Promise.reject(new Error('b failed')))
  const c = lane.run(() => Promise.resolve(order.push('c')))
  g.open()
  await a
  await expect(b).rejects.toThrow('b failed')
  await c
  expect(order).toEqual(['a start', 'a end', 'c'])
})
