// The sweep schedule is "continuous" by default, a cron expression to go back to timed sweeps, or
// "off"; the sweeps' budget share and staleness bound are checked with messages naming the key.
import { describe, expect, test } from 'vitest'
import { loadConfig, SCHEDULE_CONTINUOUS } from '../../../src/config/index.js'
import { configFile, issuesOf } from '../../support/config-file.js'

describe('continuous sweeping in the configuration', () => {
  test('FSM_SCHEDULE_SWEEP takes "continuous" (any case), a cron expression, or "off"', () => {
    expect(loadConfig({ env: {} }).schedules.sweep).toBe(SCHEDULE_CONTINUOUS)
    expect(loadConfig({ env: { FSM_SCHEDULE_SWEEP: ' Continuous ' } }).schedules.sweep).toBe('continuous')
    expect(loadConfig({ env: { FSM_SCHEDULE_SWEEP: '*/5 * * * *' } }).schedules.sweep).toBe('*/5 * * * *')
    expect(loadConfig({ env: { FSM_SCHEDULE_SWEEP: 'OFF' } }).schedules.sweep).toBe('off')
  })

  test('a bad sweep schedule names the variable and every accepted form, "continuous" included', () => {
    const [issue] = issuesOf(() => loadConfig({ env: { FSM_SCHEDULE_SWEEP: 'continous' } }))
    expect(issue?.key).toBe('FSM_SCHEDULE_SWEEP')
    expect(issue?.message).toContain('"continous" has 1 field')
    expect(issue?.message).toContain('"continuous" (the default)')
  })

  test('"continuous" is only for the sweep: another schedule refuses it', () => {
    const [issue] = issuesOf(() => loadConfig({ env: { FSM_SCHEDULE_RECONCILE: 'continuous' } }))
    expect(issue?.key).toBe('FSM_SCHEDULE_RECONCILE')
  })

  test('sync.budgetShare and sync.maxSweepIntervalSeconds from a file; out of range is refused naming the key', () => {
    const good = loadConfig({ file: configFile({ sync: { budgetShare: 0.5, maxSweepIntervalSeconds: 30 } }), env: {} })
    expect(good.sync).toMatchObject({ budgetShare: 0.5, maxSweepIntervalSeconds: 30 })
    const file = configFile({ sync: { budgetShare: 1.5, maxSweepIntervalSeconds: 1 } })
    const issues = issuesOf(() => loadConfig({ file, env: {} }))
    expect(issues).toEqual([
      { key: `sync.budgetShare (in ${file})`, message: expect.stringContaining('must be a fraction of FSM_RATE_LIMIT from 0.05 to 1') },
      { key: `sync.maxSweepIntervalSeconds (in ${file})`, message: expect.stringMatching(/>=5|5/) },
    ])
    const text = issuesOf(() => loadConfig({ file: configFile({ sync: { budgetShare: 'most' } }), env: {} }))
    expect(text[0]?.message).toContain('e.g. 0.85')
  })
})
