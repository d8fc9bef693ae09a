import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../../src/config/index.js'
import { configFile, issuesOf } from '../../support/config-file.js'

const KEY = 'svc_live_0123456789abcdef0123456789abcdef'

describe('configuration', () => {
  test('defaults match docs/configuration.md and config/example.json', () => {
    const c = loadConfig({ env: {} })
    expect(c.db).toBe('./data/fsm-mirror.db')
    expect(c.rateLimit).toBe(60)
    expect(c.httpHost).toBe('0.0.0.0')
    expect(c.httpPort).toBe(8787)
    expect(c.logLevel).toBe('info')
    expect(c.webhookSecrets).toEqual([])
    expect(c.reconcile.maxDeleteShare).toBe(0.1)
    expect(c.schedules.sweep).toBe('continuous')
    expect(c.sync.budgetShare).toBe(0.85)
    expect(c.sync.maxSweepIntervalSeconds).toBe(60)
  })

  test('precedence: flags > environment > file > defaults', () => {
    const file = configFile({ rateLimit: 30, db: '/file.db', logLevel: 'debug', httpPort: 9000 })
    const c = loadConfig({ file, env: { FSM_RATE_LIMIT: '40', FSM_DB: '/env.db' }, flags: { 'rate-limit': '50' } })
    expect(c.rateLimit).toBe(50)
    expect(c.db).toBe('/env.db')
    expect(c.logLevel).toBe('debug')
    expect(c.httpPort).toBe(9000)
  })

  test('FSM_CONFIG names the file when no flag does', () => {
    const file = configFile({ sync: { lookbackSeconds: 30 } })
    expect(loadConfig({ env: { FSM_CONFIG: file } }).sync.lookbackSeconds).toBe(30)
  })

  test('webhook secrets are a comma-separated list, first is current', () => {
    expect(loadConfig({ env: { FSM_WEBHOOK_SECRETS: 'new-secret, old-secret,' } }).webhookSecrets).toEqual(['new-secret', 'old-secret'])
  })

  test('a base URL keeps its path prefix', () => {
    expect(loadConfig({ env: { FSM_BASE_URL: 'https://host.example/prefix/' } }).baseUrl).toBe('https://host.example/prefix/')
  })

  test.each([
    ['FSM_RATE_LIMIT', { FSM_RATE_LIMIT: 'abc' }],
    ['FSM_RATE_LIMIT', { FSM_RATE_LIMIT: '0' }],
    ['FSM_HTTP_PORT', { FSM_HTTP_PORT: '70000' }],
    ['FSM_LOG_LEVEL', { FSM_LOG_LEVEL: 'loud' }],
    ['FSM_BASE_URL', { FSM_BASE_URL: 'not a url' }],
    ['FSM_API_KEY', { FSM_API_KEY: 'sk_test_123' }],
  ])('a bad %s is reported naming the variable', (name, env) => {
    const issues = issuesOf(() => loadConfig({ env }))
    expect(issues).toHaveLength(1)
    expect(issues[0]!.key).toBe(name)
  })

  test('FSM_DB_MODE sets the mirror file mode: 0640 by default, octal, owner read/write kept, nothing for others', () => {
    expect(loadConfig({ env: {} }).dbMode).toBe(0o640)
    expect(loadConfig({ env: { FSM_DB_MODE: '0600' } }).dbMode).toBe(0o600)
    expect(loadConfig({ env: { FSM_DB_MODE: '660' } }).dbMode).toBe(0o660)
    for (const [value, says] of [
      ['rw-r-----', 'octal file mode'],
      ['0844', 'octal file mode'],
      ['0440', 'owner read and write'],
      ['0644', 'others no access'],
      ['0750', 'not be executable'],
      ['0240', 'owner read and write'],
      ['0650', 'not be executable'],
    ] as const) {
      const issues = issuesOf(() => loadConfig({ env: { FSM_DB_MODE: value } }))
      expect(issues.map((i) => i.key)).toEqual(['FSM_DB_MODE'])
      expect(issues[0]!.message).toContain(says)
    }
  })

  test('every problem is reported at once', () => {
    const issues = issuesOf(() => loadConfig({ env: { FSM_RATE_LIMIT: 'abc', FSM_HTTP_PORT: '-1' }, flags: { 'log-level': 'loud' } }))
    expect(issues.map((i) => i.key).sort()).toEqual(['--log-level', 'FSM_HTTP_PORT', 'FSM_RATE_LIMIT'])
  })

  test('a bad API key is reported without echoing its value', () => {
    const bad = 'sk_test_do_not_echo_me'
    let message = ''
    try {
      loadConfig({ env: { FSM_API_KEY: bad } })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toContain('FSM_API_KEY')
    expect(message).not.toContain(bad)
    expect(loadConfig({ env: { FSM_API_KEY: KEY } }).apiKey).toBe(KEY)
  })

  test('file keys are named with their path and file; unknown keys are errors', () => {
    const file = configFile({ sync: { lookbackSeconds: -1 }, rateLimt: 5 })
    const issues = issuesOf(() => loadConfig({ file, env: {} }))
    expect(issues.map((i) => i.key).sort()).toEqual([`rateLimt (in ${file})`, `sync.lookbackSeconds (in ${file})`].sort())
  })

  test('an unreadable or invalid config file is one clear problem', () => {
    expect(issuesOf(() => loadConfig({ file: '/nonexistent/fsm.json', env: {} }))[0]!.message).toContain('no such file')
    expect(issuesOf(() => loadConfig({ file: configFile('{ nope'), env: {} }))[0]!.message).toContain('not valid JSON')
    expect(issuesOf(() => loadConfig({ file: configFile('[]'), env: {} }))[0]!.message).toContain('JSON object')
  })

  test('the documented example file is valid', () => {
    const c = loadConfig({ file: path.resolve(import.meta.dirname, '../../../config/example.json'), env: {} })
    expect(c.baseUrl).toBe('https://api.example.com')
  })
})
