// Three `fsm-sync run` replicas as child processes sharing 60 accounts of one emulator through the
// suite's real Postgres server (docs/sharding.md): ownership balanced, a SIGTERM hands its accounts
// over before their leases could have run out, a SIGKILL's accounts are owned again within the lease
// time plus 10 s, every account ends synced in its owner's mirror, and a webhook posted to a replica
// that does not own the account is applied by the owner.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { assign } from '../../../src/coordination/rendezvous.js'
import { secretsPathFor, writeSecretsFile } from '../../../src/store/repositories/secrets-file.js'
import { sign } from '../../../src/webhooks/signature.js'
import { keyVariable } from '../../support/accounts-env.js'
import { query, until, type Running } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { idleSchedules } from '../../support/schedules.js'
import { tempDir } from '../../support/temp-mirror.js'
import { owners, startReplica } from './replicas-env.js'

const ACCOUNTS = 60
let accountsFile: object
let startedAt = 0
// Long enough that a replica opening twenty mirrors at once on a loaded machine still renews in time.
const LEASE_SECONDS = 10
const COUNTS = { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 }
const SECRETS_KEY = 'the-replicas-shared-key-0123456789abcdef'
const SIGNING_SECRET = 'whsec_replicas_run_0123456789abcdef'

let emu: EmulatorEnv
let url: string
let file: string
const dirs = new Map<string, string>()
const running = new Map<string, Running>()

function start(name: string): Running {
  const dir = dirs.get(name) ?? tempDir()
  dirs.set(name, dir)
  const run = startReplica({ name, config: file, baseUrl: emu.url, dataDir: dir, accounts: emu.accounts, secretsKey: SECRETS_KEY })
  running.set(name, run)
  return run
}

/** Every account owned by one of `live` and synced in that owner's mirror (the emulator's row counts). */
async function allSynced(live: readonly string[]): Promise<boolean> {
  const by = await owners(url)
  let synced = 0
  for (const name of live)
    for (const id of by.get(name) ?? []) {
      const db = path.join(dirs.get(name)!, id, 'mirror.db')
      const clients = query(db, 'SELECT count(*) AS n FROM clients')[0]?.n
      const jobs = query(db, 'SELECT count(*) AS n FROM jobs')[0]?.n
      if (clients === COUNTS.clients && jobs === COUNTS.jobs) synced++
    }
  const counts = Object.fromEntries([...by].map(([k, v]) => [k, v.length]))
  lastUnsynced = synced === ACCOUNTS ? '' : `${synced} of ${ACCOUNTS} synced; accounts held: ${JSON.stringify(counts)}`
  return synced === ACCOUNTS
}
let lastUnsynced = ''

beforeAll(async () => {
  emu = await emulatorEnv({ accounts: ACCOUNTS, counts: COUNTS })
  url = await createDatabase(inject('postgresUrl'), 'fsm_replicas_run')
  file = path.join(tempDir(), 'config.json')
  writeFileSync(
    file,
    JSON.stringify(
      (accountsFile = {
        rateLimit: 100_000,
        schedules: idleSchedules({ sweep: 'continuous' }),
        // Two streams keep 60 accounts' work small on two cores; allSynced checks these.
        streams: ['clients', 'jobs'],
        destination: { postgres: { url } },
        sharding: { enabled: 'on', leaseSeconds: LEASE_SECONDS },
        accounts: emu.accounts.map((a) => ({ id: a.id, apiKeyEnv: keyVariable(a) })),
      }),
    ),
  )
  startedAt = Date.now()
  for (const name of ['r1', 'r2', 'r3']) start(name)
}, 60_000)

afterAll(async () => {
  // Said when a wait for every account synced gave up.
  if (lastUnsynced !== '') console.log(`last look at the accounts: ${lastUnsynced}`)
  for (const r of running.values()) r.child.kill('SIGKILL')
  await Promise.all([...running.values()].map((r) => r.exited))
  await emu.close()
})

// The tests run in order on one set of replicas: each leaves the state the next starts from.
describe('three replicas, 60 accounts', () => {
  test('ownership is balanced: each replica holds within 20 % of 20 accounts, and every account is synced', async () => {
    // Replicas starting one after the other first take more, then hand over: wait for the rendezvous.
    const wanted = assign(
      emu.accounts.map((a) => a.id),
      ['r1', 'r2', 'r3'],
    )
    const by = await until(
      'every account owned by its rendezvous replica',
      async () => {
        const o = await owners(url)
        const settled = [...wanted].every(([id, r]) => o.get(r)?.includes(id) === true)
        return settled ? o : undefined
      },
      75_000,
    )
    console.log(`all 60 accounts owned ${((Date.now() - startedAt) / 1000).toFixed(1)} s after the replicas were started`)
    for (const [name, ids] of by) {
      expect(ids.length, name).toBeGreaterThanOrEqual(16)
      expect(ids.length, name).toBeLessThanOrEqual(24)
    }
    await until('every account synced by its owner', () => allSynced(['r1', 'r2', 'r3']), 60_000)
  }, 90_000)

  test('a delivery posted to a replica that does not own the account is answered 200 and applied once by the owner', async () => {
    const id = (await owners(url)).get('r2')![0]!
    const mirror = path.join(dirs.get('r2')!, id, 'mirror.db')
    // As `webhooks register` on the owner leaves it: the owner publishes its secrets file, sealed.
    const createdAt = new Date().toISOString()
    writeSecretsFile(secretsPathFor(mirror), [
      { endpointId: 'ep-replicas', url: 'http://127.0.0.1/webhooks', secret: SIGNING_SECRET, createdAt, supersededAt: null },
    ])
    const clientId = query(mirror, 'SELECT id FROM clients ORDER BY id LIMIT 1')[0]!.id as string
    const account = emu.accounts.find((a) => a.id === id)!
    const got = await request(`${emu.url}/api/v1/clients/${clientId}`, { headers: { 'x-api-key': account.apiKey } })
    const json = (await got.body.json()) as { data?: Record<string, unknown> } & Record<string, unknown>
    const client = json.data ?? json
    const updatedAt = new Date(Date.parse(client.updatedAt as string) + 3_600_000).toISOString()
    const body = Buffer.from(JSON.stringify({ ...client, firstName: 'Relayed', updatedAt }))
    const post = async (name: string) => {
      const base = /listening on (http:\/\/[^ ]+) /.exec(running.get(name)!.output())![1]!
      const res = await request(`${base}/webhooks/${id}`, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'x-service-event': 'client.updated',
          'x-service-delivery': 'd0000000000000000000relay',
          'x-service-signature': sign(SIGNING_SECRET, body),
        },
      })
      await res.body.dump()
      return res.statusCode
    }
    // 401 until the owner has published the file it was given (every few seconds).
    await until('r1 verifies with the secrets r2 published', async () => (await post('r1')) === 200, 20_000)
    await until(
      'the owner applied it',
      () => query(mirror, 'SELECT first_name FROM clients WHERE id = ?', clientId)[0]?.first_name === 'Relayed',
      10_000,
    )
    expect(await post('r3')).toBe(200)
    expect(await post('r1')).toBe(200)
    const shared = await pgQuery<{ n: string; encrypted: boolean }>(
      url,
      `SELECT (SELECT count(*) FROM fsm_coordination.webhook_inbox WHERE account_id = $1) AS n,
              (SELECT encrypted FROM fsm_coordination.webhook_secrets WHERE account_id = $1) AS encrypted`,
      [id],
    )
    expect(shared[0]).toEqual({ n: '1', encrypted: true })
    // Kept once in the owner's local inbox, applied.
    expect(
      query(
        mirror,
        'SELECT count(*) AS n, count(processed_at) AS applied FROM webhook_inbox WHERE delivery_id = ?',
        'd0000000000000000000relay',
      ),
    ).toEqual([{ n: 1, applied: 1 }])
    for (const r of running.values()) expect(r.output()).not.toContain(SIGNING_SECRET)
    for (const r of running.values()) expect(r.output()).not.toContain(SECRETS_KEY)
  }, 60_000)

  test('SIGSTOP past the lease, then SIGCONT: the paused replica stops the accounts it lost and starts no request for them until it owns them again', async () => {
    const mine = (await owners(url)).get('r2') ?? []
    expect(mine.length).toBeGreaterThan(0)
    const run = running.get('r2')!
    run.child.kill('SIGSTOP')
    await until(
      'its accounts owned by r1 and r3',
      async () => {
        const o = await owners(url)
        return mine.every((id) => o.get('r1')?.includes(id) === true || o.get('r3')?.includes(id) === true)
      },
      (LEASE_SECONDS + 10) * 1000,
    )
    const resumedAt = Date.now()
    run.child.kill('SIGCONT')
    const lost = () =>
      run
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; account?: string; reason?: string })
        .filter((l) => l.msg === 'account leaves this replica: its runtime stops' && (l.reason === 'expired' || l.reason === 'lost'))
        .map((l) => l.account)
    await until('the paused replica stops every account it lost', () => mine.every((id) => lost().includes(id)))
    // Rendezvous gives them back to it once it heartbeats again, under a new epoch.
    await until('its accounts back', async () => {
      const held = (await owners(url)).get('r2') ?? []
      return mine.every((id) => held.includes(id))
    })
    const back = await pgQuery<{ account_id: string; at: string }>(
      url,
      `SELECT account_id, floor(extract(epoch FROM acquired_at) * 1000)::bigint AS at FROM fsm_coordination.account_leases WHERE owner = 'r2'`,
    )
    for (const { account_id: id, at } of back) {
      const db = path.join(dirs.get('r2')!, id, 'mirror.db')
      const starts = query(db, 'SELECT count(*) AS n FROM request_starts WHERE at_ms >= ? AND at_ms < ?', resumedAt, Number(at))[0]?.n
      expect(starts, id).toBe(0)
    }
  }, 90_000)

  test('SIGTERM hands the replica’s accounts over at once: none is left held by it when it exits', async () => {
    const mine = (await owners(url)).get('r2') ?? []
    expect(mine.length).toBeGreaterThan(0)
    const run = running.get('r2')!
    const t0 = Date.now()
    run.child.kill('SIGTERM')
    expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
    running.delete('r2')
    // Released before exit: nothing of r2's is waiting for its lease to run out.
    expect((await owners(url)).get('r2')).toBeUndefined()
    await until('its accounts owned by the others', async () => {
      const o = await owners(url)
      return mine.every((id) => o.get('r1')?.includes(id) === true || o.get('r3')?.includes(id) === true)
    })
    const seconds = (Date.now() - t0) / 1000
    console.log(`handover after SIGTERM: ${mine.length} accounts owned again ${seconds.toFixed(1)} s after the signal`)
    expect(run.output()).toContain('the leases are released')
    await until('every account synced by r1 and r3', () => allSynced(['r1', 'r3']), 60_000)
  }, 90_000)

  test('SIGKILL: the killed replica’s accounts are owned again within the lease time + 10 s, and synced', async () => {
    const mine = (await owners(url)).get('r3') ?? []
    expect(mine.length).toBeGreaterThan(0)
    const run = running.get('r3')!
    const t0 = Date.now()
    run.child.kill('SIGKILL')
    await run.exited
    running.delete('r3')
    await until(
      'its accounts owned by r1',
      async () => {
        const o = await owners(url)
        return mine.every((id) => o.get('r1')?.includes(id) === true)
      },
      (LEASE_SECONDS + 10) * 1000,
    )
    console.log(`takeover after SIGKILL: ${mine.length} accounts owned again ${((Date.now() - t0) / 1000).toFixed(1)} s after the kill`)
    await until('every account synced by r1', () => allSynced(['r1']), 60_000)
  }, 90_000)

  test('a reload of the accounts list: accounts taken out of it stop and their leases are released', async () => {
    const gone = emu.accounts.slice(0, 5).map((a) => a.id)
    const kept = emu.accounts.slice(5).map((a) => ({ id: a.id, apiKeyEnv: keyVariable(a) }))
    writeFileSync(file, JSON.stringify({ ...accountsFile, accounts: kept }))
    running.get('r1')!.child.kill('SIGHUP')
    await until('the removed accounts released', async () => {
      const held = (await owners(url)).get('r1') ?? []
      return held.length === ACCOUNTS - gone.length && gone.every((id) => !held.includes(id))
    })
    const rows = await pgQuery<{ owner: string | null }>(
      url,
      `SELECT owner FROM fsm_coordination.account_leases WHERE account_id = ANY($1)`,
      [gone],
    )
    expect(rows.map((r) => r.owner)).toEqual(gone.map(() => null))
  }, 60_000)
})
