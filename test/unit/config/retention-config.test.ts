// The `retention` block and `schedules.retention`: defaults, "off", and a bad value named with its fix.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config/index.js'

function fromFile(config: unknown) {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-config-')), 'config.json')
  writeFileSync(file, JSON.stringify(config))
  return loadConfig({ file, env: {} })
}

describe('retention settings', () => {
  test('old bookkeeping rows have a bounded life by default, and the pass runs hourly', () => {
    const c = loadConfig({ env: {} })
    expect(c.retention).toEqual({
      deliveriesDays: 14,
      deliveryIdsDays: 30,
      runsDays: 90,
      calendarChangesDays: 90,
      changeLogDays: 30,
      changeLogHoldDays: 90,
      batchRows: 500,
      vacuumPages: 65536,
    })
    expect(c.schedules.retention).toBe('53 * * * *')
  })

  test('"off" keeps a table\'s rows for good; FSM_SCHEDULE_RETENTION sets the schedule', () => {
    expect(fromFile({ retention: { runsDays: 'off', deliveriesDays: 7 } }).retention).toMatchObject({ runsDays: 'off', deliveriesDays: 7 })
    expect(loadConfig({ env: { FSM_SCHEDULE_RETENTION: 'off' } }).schedules.retention).toBe('off')
  })

  test('a horizon that is not whole days or "off" is refused, naming the key', () => {
    let err: unknown
    try {
      fromFile({ retention: { deliveriesDays: 0 } })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ConfigError)
    const issue = (err as ConfigError).issues[0]!
    expect(issue.key).toContain('retention.deliveriesDays')
    expect(issue.message).toContain('"off"')
  })
})
