// A schedule set to "off" (config file or FSM_SCHEDULE_*) is switched off; the scheduler never
// starts it and says so.
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig, schedulesOff } from '../../../src/config/index.js'
import { Scheduler } from '../../../src/daemon/scheduler.js'
import { createLogger } from '../../../src/log/logger.js'
import { configFile } from '../../support/config-file.js'

describe('schedules switched off', () => {
  test('"off" in the config file, any case, and the other schedules keep their values', () => {
    const c = loadConfig({ file: configFile({ schedules: { reconcile: 'off', accounting: ' OFF ', sweep: '*/2 * * * *' } }), env: {} })
    expect(c.schedules.reconcile).toBe('off')
    expect(c.schedules.accounting).toBe('off')
    expect(c.schedules.sweep).toBe('*/2 * * * *')
    expect(schedulesOff(c.schedules)).toEqual(['reconcile', 'accounting'])
  })

  test("FSM_SCHEDULE_* sets one schedule over the file, leaving the file's others", () => {
    const file = configFile({ schedules: { reconcile: '0 2 * * *', calendarA: '5 * * * *' } })
    const c = loadConfig({ file, env: { FSM_SCHEDULE_CALENDAR_A: 'off', FSM_SCHEDULE_SWEEP: '*/1 * * * *' } })
    expect(c.schedules).toMatchObject({ reconcile: '0 2 * * *', calendarA: 'off', sweep: '*/1 * * * *' })
    expect(schedulesOff(c.schedules)).toEqual(['calendarA'])
  })

  test('a bad value is named by the variable that set it, and mentions "off"', () => {
    let issues: readonly { key: string; message: string }[] = []
    try {
      loadConfig({ env: { FSM_SCHEDULE_DELIVERIES: 'never' } })
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError)
      issues = (err as ConfigError).issues
    }
    expect(issues).toEqual([{ key: 'FSM_SCHEDULE_DELIVERIES', message: expect.stringContaining('"off"') }])
  })

  test('overrides sit above the file and below the environment', () => {
    const file = configFile({ schedules: { reconcile: '0 2 * * *' }, rateLimit: 10 })
    const c = loadConfig({ file, env: { FSM_RATE_LIMIT: '30' }, overrides: { schedules: { sweep: '*/15 * * * * *' }, rateLimit: 20 } })
    expect(c.schedules).toMatchObject({ reconcile: '0 2 * * *', sweep: '*/15 * * * * *' })
    expect(c.rateLimit).toBe(30)
  })

  test('the scheduler never starts an "off" job, reports it, and still runs it when asked', async () => {
    const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
    let runs = 0
    const s = new Scheduler(
      [
        { name: 'sweep', cron: 'off', run: () => ((runs += 1), Promise.resolve()) },
        { name: 'reconcile', cron: '0 0 1 1 *', run: () => Promise.resolve() },
      ],
      logger,
    )
    s.start()
    expect(s.off()).toEqual(['sweep'])
    const next = s.nextRuns()
    expect(next.sweep).toBe('off')
    expect(next.reconcile).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(await s.runNow('sweep')).toBe(true)
    expect(runs).toBe(1)
    await s.stop()
  })
})
