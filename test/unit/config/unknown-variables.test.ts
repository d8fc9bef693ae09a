// An FSM_* variable fsm-sync does not read is refused, like an unknown key in the config file: a
// misspelt one (FSM_RATELIMIT) or one that does not exist (FSM_STREAMS) would otherwise do nothing.
import { expect, test } from 'vitest'
import { ConfigError, ENV_VARIABLES, loadConfig } from '../../../src/config/index.js'

test('an unknown FSM_ variable is a configuration error naming it; the known ones and other variables pass', () => {
  let error: unknown
  try {
    loadConfig({ env: { FSM_STREAMS: 'jobs', FSM_RATELIMIT: '10', HOME: '/root' } })
  } catch (err) {
    error = err
  }
  expect(error).toBeInstanceOf(ConfigError)
  const issues = (error as ConfigError).issues
  expect(issues.map((i) => i.key)).toEqual(['FSM_RATELIMIT', 'FSM_STREAMS'])
  expect(issues[1]!.message).toMatch(
    /is not a variable fsm-sync reads \(it reads FSM_BASE_URL, .*FSM_CONFIG\); the other settings, `streams` among them/,
  )
  // Every variable it reads is accepted (values valid for each).
  const env = Object.fromEntries(ENV_VARIABLES.map((n) => [n, n.startsWith('FSM_SCHEDULE_') ? 'off' : '']))
  expect(() => loadConfig({ env: { ...env, FSM_DB_MODE: '0640', FSM_RATE_LIMIT: '60', FSM_HTTP_PORT: '8787' } })).not.toThrow()
})
