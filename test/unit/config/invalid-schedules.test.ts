// A schedule croner refuses, or one that can never fire, is a configuration error naming the key
// as written; what docs/configuration.md promises (5 fields, or 6 with seconds first) is accepted.
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../../src/config/index.js'
import { cronProblem } from '../../../src/config/cron-check.js'
import { configFile, issuesOf } from '../../support/config-file.js'

describe('an invalid cron value is refused at config time', () => {
  test.each([
    ['99 * * * *', /minute: 99/],
    ['17 25 * * *', /hour: 25/],
    ['0 0 30 2 *', /never fires/],
    ['0 0 31 4 *', /never fires/],
    ['* * * *', /has 4 fields/],
    ['0 0 0 1 1 * 2030', /has 7 fields/],
    ['@daily', /has 1 field:/],
    ['*/0 * * * *', /stepping: 0/],
  ])('%s is refused with the accepted forms', (expr, why) => {
    const problem = cronProblem(expr)
    expect(problem).toMatch(why)
    expect(problem).toContain(`"${expr}"`)
    expect(problem).toContain('5 fields')
    expect(problem).toContain('6 with seconds first')
  })

  test.each(['*/5 * * * *', '0 */5 * * * *', '17 3 * * *', '0 0 29 2 *', '5 4 * * sun', ' 7 * * * * '])('%s is accepted', (expr) => {
    expect(cronProblem(expr)).toBeUndefined()
  })

  test('FSM_SCHEDULE_SWEEP names itself; a file key names its path and file', () => {
    const file = configFile({ schedules: { reconcile: '17 25 * * *', accounting: '0 0 30 2 *' } })
    const issues = issuesOf(() => loadConfig({ file, env: { FSM_SCHEDULE_SWEEP: '99 * * * *' } }))
    expect(issues).toEqual([
      {
        key: 'FSM_SCHEDULE_SWEEP',
        message: expect.stringMatching(/^"99 \* \* \* \*" is not a valid cron expression \(Invalid value for minute: 99\)/),
      },
      { key: `schedules.reconcile (in ${file})`, message: expect.stringContaining('Invalid value for hour: 25') },
      { key: `schedules.accounting (in ${file})`, message: expect.stringContaining('never fires') },
    ])
  })

  test('the value the scheduler gets is the trimmed one that was checked', () => {
    expect(loadConfig({ env: { FSM_SCHEDULE_SWEEP: '  */2 * * * *  ' } }).schedules.sweep).toBe('*/2 * * * *')
  })
})
