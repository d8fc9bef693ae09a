// The `accounts` list: one Config per account from the top-level settings and the account's own,
// keys from files or variables (never echoed), each problem naming the account and the key.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { ConfigError, diffAccounts, loadAccounts, loadConfig } from '../../../src/config/index.js'
import { configFile, issuesOf } from '../../support/config-file.js'

const NORTH_KEY = 'svc_live_north0123456789abcdef0123456789'
const SOUTH_KEY = 'svc_live_south0123456789abcdef0123456789'

/** A key file in a fresh folder holding `text`. */
function keyFile(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-key-')), 'key')
  writeFileSync(file, text)
  return file
}

const north = () => ({ id: 'north', baseUrl: 'https://north.example', apiKeyFile: keyFile(NORTH_KEY + '\n') })
const south = () => ({ id: 'south', apiKeyEnv: 'SOUTH_API_KEY' })
const ENV = { SOUTH_API_KEY: SOUTH_KEY }

describe('accounts list', () => {
  test('each account gets the top-level settings merged with its own, its key and its mirror under dataDir', () => {
    const file = configFile({
      baseUrl: 'https://top.example',
      rateLimit: 30,
      httpPort: 9000,
      schedules: { sweep: 'off', reference: '1 * * * *' },
      accounts: [{ ...north(), rateLimit: 10, schedules: { reference: '2 * * * *' } }, south()],
    })
    const loaded = loadAccounts({ file, env: ENV })
    expect(loaded.listed).toBe(true)
    expect(loaded.accounts.map((a) => a.id)).toEqual(['north', 'south'])
    const [n, s] = loaded.accounts.map((a) => a.config)
    expect(n).toMatchObject({ apiKey: NORTH_KEY, baseUrl: 'https://north.example', rateLimit: 10, httpPort: 9000 })
    expect(n!.db).toBe(path.join('data', 'north', 'mirror.db'))
    // One level deep: the account's `schedules` keeps the top-level schedules it does not set.
    expect(n!.schedules).toMatchObject({ sweep: 'off', reference: '2 * * * *', reconcile: '17 3 * * *' })
    expect(s).toMatchObject({ apiKey: SOUTH_KEY, baseUrl: 'https://top.example', rateLimit: 30 })
    expect(s!.schedules.reference).toBe('1 * * * *')
    // The process's settings hold no key and no account's values.
    expect(loaded.config.apiKey).toBeUndefined()
    expect(loaded.config.rateLimit).toBe(30)
  })

  test('dataDir from FSM_DATA_DIR over the file, and an account may set its own db', () => {
    const file = configFile({ dataDir: '/file/data', accounts: [north(), { ...south(), db: '/elsewhere/south.db' }] })
    const [n, s] = loadAccounts({ file, env: { ...ENV, FSM_DATA_DIR: '/env/data' } }).accounts
    expect(n!.config.db).toBe('/env/data/north/mirror.db')
    expect(s!.config.db).toBe('/elsewhere/south.db')
    expect(loadAccounts({ file, env: ENV }).accounts[0]!.config.db).toBe('/file/data/north/mirror.db')
  })

  test('environment and flags still win over an account value; FSM_API_KEY, FSM_DB and secrets are ignored with a warning', () => {
    const file = configFile({ accounts: [{ ...north(), rateLimit: 10, db: '/n.db' }] })
    const warnings: string[] = []
    const env = { FSM_RATE_LIMIT: '20', FSM_API_KEY: 'svc_live_topkey', FSM_DB: '/top.db', FSM_WEBHOOK_SECRETS: 'shh' }
    const loaded = loadAccounts({ file, env, warn: (m) => warnings.push(m) })
    expect(loaded.accounts[0]!.config).toMatchObject({ rateLimit: 20, apiKey: NORTH_KEY, db: '/n.db', webhookSecrets: [] })
    expect(warnings.map((w) => w.split(' ')[0])).toEqual(['FSM_API_KEY', 'FSM_DB', 'FSM_WEBHOOK_SECRETS'])
    expect(warnings.join('\n')).not.toMatch(/svc_live_topkey|shh/)
  })

  test("the file's top-level key, mirror and secrets reach no account", () => {
    const warnings: string[] = []
    const file = configFile({ apiKey: NORTH_KEY, db: '/top.db', webhookSecrets: ['top-secret'], accounts: [south()] })
    const [s] = loadAccounts({ file, env: ENV, warn: (m) => warnings.push(m) }).accounts
    expect(s!.config).toMatchObject({ apiKey: SOUTH_KEY, webhookSecrets: [], db: path.join('data', 'south', 'mirror.db') })
    expect(warnings).toHaveLength(3)
    expect(warnings.join('\n')).not.toMatch(/top-secret|svc_live_/)
  })

  test('a variable named by apiKeyEnv is read on purpose, never refused as an unknown FSM_* variable', () => {
    const file = configFile({ accounts: [{ id: 'a', apiKeyEnv: 'FSM_API_KEYS' }] })
    expect(loadAccounts({ file, env: { FSM_API_KEYS: NORTH_KEY } }).accounts[0]!.config.apiKey).toBe(NORTH_KEY)
  })

  test('without a list: one account "default" at the mirror of today, the config itself', () => {
    const loaded = loadAccounts({ env: { FSM_API_KEY: NORTH_KEY, FSM_DATA_DIR: '/env/data' } })
    expect(loaded.listed).toBe(false)
    expect(loaded.accounts).toEqual([{ id: 'default', config: loaded.config }])
    expect(loaded.config.db).toBe('./data/fsm-mirror.db')
    expect(loaded.config.apiKey).toBe(NORTH_KEY)
    expect(loadConfig({ env: { FSM_API_KEY: NORTH_KEY, FSM_DATA_DIR: '/env/data' } })).toEqual(loaded.config)
  })

  test('an empty list is no account', () => {
    expect(loadAccounts({ file: configFile({ accounts: [] }), env: {} }).accounts).toEqual([])
  })

  test.each([
    ['a bad id', [{ id: 'North!', apiKeyEnv: 'K' }], 'accounts[0]: id', /lowercase letters/],
    ['a missing id', [{ apiKeyEnv: 'K' }], 'accounts[0]: id', /is missing/],
    [
      'a duplicate id',
      [
        { id: 'a', apiKeyEnv: 'K' },
        { id: 'a', apiKeyEnv: 'K' },
      ],
      'accounts[1] (id "a"): id',
      /accounts\[0\].*unique/,
    ],
    ['a key inline', [{ id: 'a', apiKey: NORTH_KEY }], 'accounts[0] (id "a"): apiKey', /apiKeyFile.*apiKeyEnv/],
    ['no key at all', [{ id: 'a' }], 'accounts[0] (id "a"): apiKeyFile', /apiKeyFile.*apiKeyEnv/],
    ['a missing key file', [{ id: 'a', apiKeyFile: '/nowhere/key' }], 'accounts[0] (id "a"): apiKeyFile', /\/nowhere\/key: no such file/],
    ['a missing variable', [{ id: 'a', apiKeyEnv: 'NOT_SET_KEY' }], 'accounts[0] (id "a"): apiKeyEnv', /NOT_SET_KEY is not set/],
    ['a process key', [{ id: 'a', apiKeyEnv: 'K', httpPort: 1 }], 'accounts[0] (id "a"): httpPort', /process setting.*top level/],
    [
      'an intake limit',
      [{ id: 'a', apiKeyEnv: 'K', webhooks: { maxConnections: 99 } }],
      'accounts[0] (id "a"): webhooks.maxConnections',
      /process setting/,
    ],
    [
      'a webhooks path',
      [{ id: 'a', apiKeyEnv: 'K', webhooks: { path: '/hooks' } }],
      'accounts[0] (id "a"): webhooks.path',
      /process setting/,
    ],
    ['the destination', [{ id: 'a', apiKeyEnv: 'K', destination: {} }], 'accounts[0] (id "a"): destination', /process setting/],
    ['the metrics', [{ id: 'a', apiKeyEnv: 'K', metrics: { perAccount: 'full' } }], 'accounts[0] (id "a"): metrics', /process setting/],
    ['secrets inline', [{ id: 'a', apiKeyEnv: 'K', webhookSecrets: ['x'] }], 'accounts[0] (id "a"): webhookSecrets', /secrets file/],
    ['an unknown key', [{ id: 'a', apiKeyEnv: 'K', scheduls: {} }], 'accounts[0] (id "a"): scheduls', /not a known setting/],
    ['not a list', { id: 'a' }, 'accounts', /must be a list/],
  ])('%s is refused naming the account and the key', (_, accounts, key, message) => {
    const issues = issuesOf(() => loadAccounts({ file: configFile({ accounts }), env: { K: NORTH_KEY } }))
    expect(issues).toContainEqual({ key, message: expect.stringMatching(message) })
    expect(issues).toHaveLength(1)
  })

  test('a bad override names the account and the key as written; every problem is reported at once', () => {
    const file = configFile({
      accounts: [
        north(),
        { id: 'b', apiKeyEnv: 'K', schedules: { sweep: '99 * * * *' } },
        { id: 'c', apiKeyEnv: 'K', sync: { pageSize: 1 } },
      ],
    })
    const issues = issuesOf(() => loadAccounts({ file, env: { K: NORTH_KEY } }))
    expect(issues.map((i) => i.key)).toEqual(['accounts[1] (id "b"): schedules.sweep', 'accounts[2] (id "c"): sync.pageSize'])
  })

  test('a problem of the top level is told once, not again for each account', () => {
    const file = configFile({ rateLimit: 0, accounts: [north(), south()] })
    const issues = issuesOf(() => loadAccounts({ file, env: ENV }))
    expect(issues.map((i) => i.key)).toEqual([`rateLimit (in ${file})`])
  })

  test('an empty key file and a malformed key are refused; the trailing newline is no part of the key', () => {
    const empty = keyFile('\n')
    const bad = keyFile('sk_test_123\n')
    const issues = issuesOf(() =>
      loadAccounts({
        file: configFile({
          accounts: [
            { id: 'a', apiKeyFile: empty },
            { id: 'b', apiKeyFile: bad },
          ],
        }),
        env: {},
      }),
    )
    expect(issues).toEqual([
      { key: 'accounts[0] (id "a"): apiKeyFile', message: `the key file ${empty} is empty: write the account's API key in it` },
      { key: 'accounts[1] (id "b"): apiKeyFile', message: expect.stringMatching(/svc_live_.*not shown/) },
    ])
  })

  test('no key value ever appears in an error message', () => {
    const secret = 'svc_live_SECRETSECRETSECRET'
    const wrong = 'sk_live_WRONGWRONGWRONG'
    const file = configFile({
      rateLimit: 0,
      accounts: [
        { id: 'a', apiKey: secret },
        { id: 'b', apiKeyFile: keyFile(wrong), rateLimit: 'x' },
        { id: 'c', apiKeyEnv: 'WRONG_KEY', httpPort: 1 },
        { id: 'a', apiKeyFile: keyFile(secret), apiKeyEnv: 'WRONG_KEY' },
      ],
    })
    let error: unknown
    try {
      loadAccounts({ file, env: { WRONG_KEY: wrong, FSM_API_KEY: wrong } })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const text = JSON.stringify({ message: (error as ConfigError).message, issues: (error as ConfigError).issues })
    expect((error as ConfigError).issues.map((i) => i.key)).toContain('accounts[1] (id "b"): apiKeyFile')
    expect(text).not.toContain('SECRETSECRET')
    expect(text).not.toContain('WRONGWRONG')
  })
})

describe('diffAccounts', () => {
  const load = (accounts: unknown[], env: Record<string, string> = ENV) => loadAccounts({ file: configFile({ accounts }), env }).accounts

  test('names the ids added, removed and changed; an unchanged list is no change', () => {
    const n = north()
    const before = load([n, south(), { id: 'west', apiKeyEnv: 'SOUTH_API_KEY' }])
    expect(diffAccounts(before, load([n, south(), { id: 'west', apiKeyEnv: 'SOUTH_API_KEY' }]))).toEqual({
      added: [],
      removed: [],
      changed: [],
    })
    const after = load([
      { ...n, rateLimit: 5 },
      { id: 'east', apiKeyEnv: 'SOUTH_API_KEY' },
      { id: 'west', apiKeyEnv: 'SOUTH_API_KEY' },
    ])
    expect(diffAccounts(before, after)).toEqual({ added: ['east'], removed: ['south'], changed: ['north'] })
  })

  test('a key rotated in its file or variable is a change', () => {
    const file = keyFile(NORTH_KEY)
    const before = load([{ id: 'north', apiKeyFile: file }, south()])
    writeFileSync(file, 'svc_live_rotated\n')
    const after = load([{ id: 'north', apiKeyFile: file }, south()], { SOUTH_API_KEY: 'svc_live_rotated_too' })
    expect(diffAccounts(before, after).changed).toEqual(['north', 'south'])
  })
})
