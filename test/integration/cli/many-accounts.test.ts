// The CLI over a config file that lists several accounts, run as a user runs it (child processes,
// one emulator serving three accounts, real mirrors under the data folder): `--account` picks one
// account's key, mirror and webhook path; `accounts`, `status` and `doctor` cover every account.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { readSecretsFile, secretsPathFor } from '../../../src/store/repositories/secrets-file.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { query } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const IDS = ['north', 'south', 'east'] as const
let emu: EmulatorEnv
let dataDir: string
let config: string
let env: Record<string, string>

/** A config file listing `ids` (keys from files, south's from a variable); `keys` overrides an account's key. */
function writeConfig(ids: readonly string[], keys: Record<string, string> = {}, data = dataDir): string {
  const dir = tempDir()
  const accounts = ids.map((id, i) => {
    const key = keys[id] ?? emu.accounts[i]!.apiKey
    if (id === 'south') return { id, apiKeyEnv: 'SOUTH_KEY' }
    const file = path.join(dir, `${id}.key`)
    writeFileSync(file, `${key}\n`)
    return { id, apiKeyFile: file }
  })
  const file = path.join(dir, 'config.json')
  writeFileSync(file, JSON.stringify({ baseUrl: emu.url, dataDir: data, rateLimit: 100000, accounts }))
  return file
}

const cli = (args: string[], file = config) => runCli(['--config', file, ...args], env)
const mirrorOf = (id: string) => path.join(dataDir, id, 'mirror.db')

beforeAll(async () => {
  emu = await emulatorEnv({
    accounts: 3,
    counts: { clients: 4, jobs: 3, visitsPerJob: 1, invoices: 2, customRecords: 1 },
    allowHttpWebhooks: true,
  })
  dataDir = tempDir()
  env = cleanEnv({ SOUTH_KEY: emu.accounts[1]!.apiKey })
  config = writeConfig(IDS)
  // north and south synced; east never.
  const [north, south] = await Promise.all([cli(['sync', '--account', 'north']), cli(['sync', '--account', 'south'])])
  expect(north.code, north.stderr).toBe(0)
  expect(south.code, south.stderr).toBe(0)
}, 120_000)
afterAll(() => emu.close())

describe('--account', () => {
  test('sync --account north fills north mirror exactly from north account; status --account north reports it', async () => {
    const acct = emu.accounts[0]!
    const state = async (resource: string) => acct.control<Record<string, unknown>[]>('GET', `/state/${resource}`)
    const { compared, mismatches } = await compareMirror(state, (sql, ...p) => query(mirrorOf('north'), sql, ...p), [])
    expect(mismatches).toEqual([])
    expect(Object.values(compared).reduce((a, b) => a + b, 0)).toBeGreaterThan(0)
    // Nothing of south reached north's mirror: south's clients are not there.
    const southClients = (await emu.accounts[1]!.control<{ id: string }[]>('GET', '/state/clients')).map((c) => c.id)
    const northIds = new Set(query(mirrorOf('north'), 'SELECT id FROM clients').map((r) => r.id))
    expect(southClients.filter((id) => northIds.has(id))).toEqual([])

    const status = await cli(['status', '--account', 'north', '--json'])
    expect(status.code, status.stderr).toBe(0)
    const doc = JSON.parse(status.stdout) as { synced: boolean; streams: { stream: string; rows: number | null }[] }
    expect(doc.synced).toBe(true)
    const clients = query(mirrorOf('north'), 'SELECT count(*) AS n FROM clients WHERE deleted_at IS NULL')[0]!.n
    expect(doc.streams.find((s) => s.stream === 'clients')?.rows).toBe(clients)
  })

  test('with three accounts a per-account command without --account, or with an unknown id, is a usage error naming the ids', async () => {
    const [sync, query_, unknown, json] = await Promise.all([
      cli(['sync']),
      cli(['query', 'select 1']),
      cli(['schema', '--account', 'west']),
      cli(['reconcile', '--json']),
    ])
    for (const r of [sync, query_, json]) {
      expect(r.code).toBe(2)
      expect(r.stderr).toContain('--account is required: the config file lists 3 accounts (north, south, east)')
    }
    expect(JSON.parse(json.stdout)).toEqual({ error: { message: expect.stringContaining('north, south, east'), exitCode: 2 } })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('--account west: no such account; the accounts of the config file are: north, south, east')
    // Nothing was created for the command refused.
    expect(query(mirrorOf('east'), 'SELECT 1')).toEqual([])
  })

  test('a single-account config needs no --account; --account default names its one account, whose webhook path is /webhooks', async () => {
    const db = path.join(tempDir(), 'mirror.db')
    const single = { ...env, FSM_BASE_URL: emu.url, FSM_API_KEY: emu.accounts[2]!.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' }
    const sync = await runCli(['sync', '--stream', 'clients'], single)
    expect(sync.code, sync.stderr).toBe(0)
    const named = await runCli(['query', '--account', 'default', 'select count(*) AS n from clients'], single)
    expect(named.code, named.stderr).toBe(0)
    const other = await runCli(['status', '--account', 'north'], single)
    expect(other.code).toBe(2)
    expect(other.stderr).toContain('without an accounts list in the config file the one account is default')
    // Its webhook path is the configured one, today's `/webhooks`, added to a --url without a path.
    const hook = await runCli(['webhooks', 'register', '--url', 'http://127.0.0.1:11', '--json'], single)
    expect(hook.code, hook.stderr).toBe(0)
    expect((JSON.parse(hook.stdout) as { url: string }).url).toBe('http://127.0.0.1:11/webhooks')
  })
})

describe('every account', () => {
  test('accounts --json lists the three with their states: two synced, east never synced', async () => {
    const r = await cli(['accounts', '--json'])
    expect(r.code, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as {
      listed: boolean
      accounts: {
        id: string
        state: string
        db: string
        lastSweep: { outcome: string } | null
        budget: { requestsLastMinute: number | null }
      }[]
    }
    expect(doc.listed).toBe(true)
    expect(doc.accounts.map((a) => [a.id, a.state])).toEqual([
      ['north', 'ok'],
      ['south', 'ok'],
      ['east', 'never synced'],
    ])
    expect(doc.accounts[0]!.db).toBe(mirrorOf('north'))
    expect(doc.accounts[0]!.lastSweep?.outcome).toBe('success')
    // The sync of the last minute spent requests, recorded in north's request ledger.
    expect(doc.accounts[0]!.budget.requestsLastMinute).toBeGreaterThan(0)
    expect(doc.accounts[2]!.lastSweep).toBeNull()

    const text = await cli(['accounts'])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^account\s+state\s+last sweep\s+staleness\s+requests\s+webhooks\s+destination lag\s+last error$/m)
    expect(text.stdout).toMatch(/^east\s+never synced\s+never\s+no mirror yet$/m)
  })

  test('accounts: an unreadable mirror is a state of its account, the others are still listed, exit 1', async () => {
    const dir = tempDir()
    const broken = path.join(dir, 'config.json')
    const key = path.join(dir, 'north.key')
    writeFileSync(key, emu.accounts[0]!.apiKey)
    const junk = path.join(dir, 'junk.db')
    writeFileSync(junk, 'this is not a database, only text long enough to be read as a header of one'.repeat(20))
    writeFileSync(
      broken,
      JSON.stringify({
        baseUrl: emu.url,
        dataDir,
        accounts: [
          { id: 'north', apiKeyFile: key },
          { id: 'junk', apiKeyFile: key, db: junk },
        ],
      }),
    )
    const r = await cli(['accounts', '--json'], broken)
    expect(r.code).toBe(1)
    const doc = JSON.parse(r.stdout) as { accounts: { id: string; state: string; detail: string | null }[] }
    expect(doc.accounts.map((a) => [a.id, a.state])).toEqual([
      ['north', 'ok'],
      ['junk', 'unreadable'],
    ])
    expect(doc.accounts[1]!.detail).toContain(junk)
  })

  test('accounts: an account whose sync fails (a rejected key) is failing, with its last error; exit 1', async () => {
    const rejected = writeConfig(['east'], { east: 'svc_live_0000000000000000000000000000dead' }, tempDir())
    const sync = await cli(['sync', '--stream', 'clients'], rejected)
    expect(sync.code).toBe(1)
    const r = await cli(['accounts', '--json'], rejected)
    expect(r.code).toBe(1)
    const [east] = (JSON.parse(r.stdout) as { accounts: { id: string; state: string; lastError: { stream: string; message: string } }[] })
      .accounts
    expect(east).toMatchObject({ id: 'east', state: 'failing', lastError: { stream: 'clients', message: expect.stringContaining('401') } })
  })

  test('status without --account: one line per account; with --account the full report', async () => {
    const r = await cli(['status'])
    expect(r.code, r.stderr).toBe(0)
    const lines = r.stdout.split('\n')
    expect(lines[0]).toMatch(/^account\s+state\s+last sweep\s+staleness\s+destination lag$/)
    expect(lines[1]).toMatch(/^north\s+ok\s+(\d+m)?\d+s ago \(success\)\s+~\S+$/)
    expect(lines[2]).toMatch(/^south\s+ok\s+(\d+m)?\d+s ago \(success\)\s+~\S+$/)
    expect(lines[3]).toMatch(/^east\s+never synced\s+never$/)
    const json = await cli(['status', '--json'])
    expect((JSON.parse(json.stdout) as { accounts: { id: string }[] }).accounts.map((a) => a.id)).toEqual([...IDS])
    const one = await cli(['status', '--account', 'south'])
    expect(one.code, one.stderr).toBe(0)
    expect(one.stdout).toMatch(/^stream\s+table\s+rows/)
  })

  test('doctor without --account checks every account and names the failing one (a rejected key)', async () => {
    const bad = writeConfig(IDS, { east: 'svc_live_0000000000000000000000000000dead' })
    const r = await cli(['doctor'], bad)
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^✓ account north: /m)
    expect(r.stdout).toMatch(/^✗ account east: /m)
    expect(r.stdout.trimEnd().split('\n').at(-1)).toMatch(/check\(s\) failed; failing accounts: east\.$/)
    const json = await cli(['doctor', '--json'], bad)
    expect(json.code).toBe(1)
    const doc = JSON.parse(json.stdout) as { ok: boolean; failingAccounts: string[]; checks: { account?: string; ok: boolean }[] }
    expect(doc.ok).toBe(false)
    expect(doc.failingAccounts).toEqual(['east'])
    expect(doc.checks.filter((c) => !c.ok && c.account !== undefined).every((c) => c.account === 'east')).toBe(true)
    expect(r.stdout + r.stderr).not.toContain('0000dead')
  })

  test("webhooks register --account south registers /webhooks/south on south's account and keeps the secret in south's file", async () => {
    const r = await cli(['webhooks', 'register', '--account', 'south', '--url', 'http://127.0.0.1:9', '--json'])
    expect(r.code, r.stderr).toBe(0)
    const doc = JSON.parse(r.stdout) as { endpointId: string; url: string; secretsFile: string }
    expect(doc.url).toBe('http://127.0.0.1:9/webhooks/south')
    expect(doc.secretsFile).toBe(secretsPathFor(mirrorOf('south')))
    const south = await emu.accounts[1]!.control<{ id: string; url: string }[]>('GET', '/state/webhooks')
    expect(south.map((e) => e.url)).toContain('http://127.0.0.1:9/webhooks/south')
    const north = await emu.accounts[0]!.control<{ id: string; url: string }[]>('GET', '/state/webhooks')
    expect(north.map((e) => e.url)).not.toContain('http://127.0.0.1:9/webhooks/south')
    expect(readSecretsFile(secretsPathFor(mirrorOf('south'))).map((e) => e.endpointId)).toEqual([doc.endpointId])
    expect(readSecretsFile(secretsPathFor(mirrorOf('north')))).toEqual([])

    // Another account's path on this account is refused before anything is registered.
    const wrong = await cli(['webhooks', 'register', '--account', 'north', '--url', 'http://127.0.0.1:9/webhooks/south'])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain('ends with the path of account south; account north takes its deliveries at /webhooks/north')
  })
})

describe('replicate --account', () => {
  test("two accounts replicate into one schema, each account's rows under its own account_id", async () => {
    const url = await createDatabase(inject('postgresUrl'))
    const pgEnv = { ...env, FSM_POSTGRES_URL: url }
    for (const id of ['north', 'south']) {
      const r = await runCli(['--config', config, 'replicate', '--account', id], pgEnv)
      expect(r.code, r.stderr).toBe(0)
    }
    const rows = await pgQuery<{ account_id: string; n: string }>(
      url,
      'SELECT account_id, count(*) AS n FROM fsm.clients GROUP BY account_id ORDER BY account_id',
    )
    const mirrored = (id: string) => String(query(mirrorOf(id), 'SELECT count(*) AS n FROM clients')[0]!.n)
    expect(rows).toEqual([
      { account_id: 'north', n: mirrored('north') },
      { account_id: 'south', n: mirrored('south') },
    ])
  })
})
