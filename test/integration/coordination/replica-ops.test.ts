// Operating `fsm-sync run` replicas (docs/sharding.md): a third replica joining two takes about a
// third of 60 accounts with no account synced by two replicas at once (the emulator's request log,
// each replica's requests named by a proxy), and its /metrics counts the takeovers; a SIGKILL while
// webhooks are posted to every replica loses no acknowledged delivery; a SIGTERM hands over at once,
// and `fsm-sync replicas` shows the accounts waiting while no replica heartbeats.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { assign } from '../../../src/coordination/rendezvous.js'
import { secretsPathFor, writeSecretsFile } from '../../../src/store/repositories/secrets-file.js'
import { sign } from '../../../src/webhooks/signature.js'
import { keyVariable } from '../../support/accounts-env.js'
import { query, until, type Running } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase } from '../../support/postgres-server.js'
import { cleanEnv, ROOT, runCli } from '../../support/run-cli.js'
import { idleSchedules } from '../../support/schedules.js'
import { tempDir } from '../../support/temp-mirror.js'
import { baseUrl, ownerOf, owners, replicaSamples, sampleValue, startReplica, taggingProxy, userAgentOf } from './replicas-env.js'

const ACCOUNTS = 60
const LEASE_SECONDS = 10
const COUNTS = { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 }
const SECRETS_KEY = 'the-replicas-shared-key-0123456789abcdef'
const SIGNING_SECRET = 'whsec_replica_ops_0123456789abcdef'
const NAMES = ['r1', 'r2', 'r3']

let emu: EmulatorEnv
let url: string
let file: string
const dirs = new Map(NAMES.map((n) => [n, tempDir()]))
const proxies = new Map<string, { url: string; close: () => Promise<void> }>()
const running = new Map<string, Running>()
const ids = () => emu.accounts.map((a) => a.id)

function start(name: string): Running {
  const run = startReplica({
    name,
    config: file,
    baseUrl: proxies.get(name)!.url,
    dataDir: dirs.get(name)!,
    accounts: emu.accounts,
    secretsKey: SECRETS_KEY,
  })
  running.set(name, run)
  return run
}

/** Every account owned by its rendezvous replica among `live`, and synced in that owner's mirror. */
async function settled(live: readonly string[]): Promise<Map<string, string> | undefined> {
  const by = ownerOf(await owners(url))
  for (const [id, name] of assign(ids(), live)) {
    if (by.get(id) !== name) return undefined
    const db = path.join(dirs.get(name)!, id, 'mirror.db')
    if (query(db, 'SELECT count(*) AS n FROM clients')[0]?.n !== COUNTS.clients) return undefined
    if (query(db, 'SELECT count(*) AS n FROM jobs')[0]?.n !== COUNTS.jobs) return undefined
  }
  return by
}

beforeAll(async () => {
  emu = await emulatorEnv({ accounts: ACCOUNTS, counts: COUNTS })
  url = await createDatabase(inject('postgresUrl'), 'fsm_replica_ops')
  file = path.join(tempDir(), 'config.json')
  const config = {
    rateLimit: 100_000,
    schedules: idleSchedules({ sweep: 'continuous' }),
    streams: ['clients', 'jobs'],
    destination: { postgres: { url } },
    sharding: { enabled: 'on', leaseSeconds: LEASE_SECONDS },
    accounts: emu.accounts.map((a) => ({ id: a.id, apiKeyEnv: keyVariable(a) })),
  }
  writeFileSync(file, JSON.stringify(config))
  // As `webhooks register` leaves each replica's folder: every replica verifies every account's deliveries.
  const createdAt = new Date().toISOString()
  for (const dir of dirs.values())
    for (const id of ids()) {
      mkdirSync(path.join(dir, id), { recursive: true })
      writeSecretsFile(secretsPathFor(path.join(dir, id, 'mirror.db')), [
        { endpointId: 'ep-ops', url: 'http://127.0.0.1/webhooks', secret: SIGNING_SECRET, createdAt, supersededAt: null },
      ])
    }
  for (const name of NAMES) proxies.set(name, await taggingProxy(emu.url, name))
  start('r1')
  start('r2')
}, 60_000)

afterAll(async () => {
  for (const r of running.values()) r.child.kill('SIGKILL')
  await Promise.all([...running.values()].map((r) => r.exited))
  for (const p of proxies.values()) await p.close()
  await emu.close()
})

// In order, on one set of replicas: each test leaves the state the next starts from.
describe('operating replicas, 60 accounts', () => {
  test('a replica added to two: about a third of the accounts move to it, none synced by two replicas at once, and /metrics counts the takeovers', async () => {
    const before = await until('two replicas settled and synced', () => settled(['r1', 'r2']), 150_000)
    const handedOver = async () => {
      let n = 0
      for (const name of ['r1', 'r2'])
        n += sampleValue(await replicaSamples(running.get(name)!), 'fsm_replica_accounts_stopped_total', {
          replica: name,
          reason: 'handover',
        })
      return n
    }
    const handedBefore = await handedOver()
    const r3 = start('r3')
    const after = await until('three replicas settled and synced', () => settled(NAMES), 150_000)
    const moved = ids().filter((id) => before.get(id) !== after.get(id))
    expect(moved.every((id) => after.get(id) === 'r3')).toBe(true)
    expect(moved.length).toBeGreaterThanOrEqual(16)
    expect(moved.length).toBeLessThanOrEqual(24)

    // The new owner goes on with the old owner's sweep schedule: its first request for an account
    // comes when a stream is due, within the sweeps' bound (60 s) of the old owner's last sweep.
    const logOf = (a: (typeof emu.accounts)[number]) =>
      a.control<{ userAgent: string | null; time: string; startedAt: string }[]>('GET', '/requests?path=/api/v1/')
    const movedAccounts = emu.accounts.filter((a) => moved.includes(a.id))
    await until(
      'the new owner requested for every account it took',
      async () => (await Promise.all(movedAccounts.map(logOf))).every((log) => log.some((e) => e.userAgent === userAgentOf('r3'))),
      90_000,
    )
    // The emulator's log of each account: every request of the old owner ended before the new one's first began.
    for (const account of emu.accounts) {
      const log = await account.control<{ userAgent: string | null; time: string; startedAt: string }[]>('GET', '/requests?path=/api/v1/')
      const of = (name: string) => log.filter((e) => e.userAgent === userAgentOf(name))
      if (!moved.includes(account.id)) {
        expect(of('r3'), account.id).toEqual([])
        continue
      }
      // Every earlier owner's, not only the last one's: a replica that held the account briefly
      // before r3 came may have made no request (it went on with the schedule and none was due).
      const old = [...of('r1'), ...of('r2')]
      const next = of('r3')
      expect(old.length, account.id).toBeGreaterThan(0)
      expect(next.length, account.id).toBeGreaterThan(0)
      const lastOld = Math.max(...old.map((e) => Date.parse(e.time)))
      const firstNew = Math.min(...next.map((e) => Date.parse(e.startedAt)))
      expect(lastOld, account.id).toBeLessThan(firstNew)
    }

    // The new owner's series: each moved account taken over once, its handover observed once its first sweep ended.
    const samples = await until(
      'r3’s handovers observed',
      async () => {
        const s = await replicaSamples(r3)
        return sampleValue(s, 'fsm_replica_handover_seconds_count') >= moved.length ? s : undefined
      },
      60_000,
    )
    const r3Labels = { replica: 'r3' }
    expect(sampleValue(samples, 'fsm_replica_accounts_owned', r3Labels)).toBe(moved.length)
    // More when a loaded replica's heartbeat came late and r3 briefly counted it out (it then hands back).
    expect(sampleValue(samples, 'fsm_replica_takeovers_total', r3Labels)).toBeGreaterThanOrEqual(moved.length)
    expect(sampleValue(samples, 'fsm_replica_accounts_waiting', r3Labels)).toBe(0)
    expect(sampleValue(samples, 'fsm_replica_lease_renewals_total', { ...r3Labels, outcome: 'failed' })).toBe(0)
    expect(sampleValue(samples, 'fsm_replica_lease_renewals_total', { ...r3Labels, outcome: 'ok' })).toBeGreaterThan(0)
    expect(sampleValue(samples, 'fsm_replica_handover_seconds_sum')).toBeGreaterThan(0)
    console.log(
      `replica added: ${moved.length} of ${ACCOUNTS} accounts moved; mean handover ${(sampleValue(samples, 'fsm_replica_handover_seconds_sum') / moved.length).toFixed(1)} s (release to the end of the first sweep)`,
    )
    // The old owners handed them over; every series carries the replica's name and nothing per account.
    expect((await handedOver()) - handedBefore).toBeGreaterThanOrEqual(moved.length)
    const documented = Number(/a replica has (\d+) series/.exec(readFileSync(path.join(ROOT, 'docs/metrics.md'), 'utf8'))![1])
    expect(samples).toHaveLength(documented)
    expect(samples.every((s) => Object.keys(s.labels).every((k) => ['replica', 'outcome', 'reason', 'le'].includes(k)))).toBe(true)
  }, 360_000)

  test('SIGKILL of a replica while webhooks are posted to all three: every acknowledged delivery is applied in its owner’s mirror', async () => {
    const clients = new Map<string, Record<string, unknown>[]>()
    for (const a of emu.accounts) {
      const res = await request(`${emu.url}/api/v1/clients`, { headers: { 'x-api-key': a.apiKey } })
      clients.set(a.id, ((await res.body.json()) as { data: Record<string, unknown>[] }).data)
    }
    const acked: { account: string; deliveryId: string; to: string }[] = []
    const refused: Record<string, number> = {}
    let n = 0
    let posting = true
    const post = async (to: string) => {
      while (posting) {
        const i = n++
        const account = emu.accounts[i % ACCOUNTS]!.id
        const client = clients.get(account)![Math.floor(i / ACCOUNTS) % COUNTS.clients]!
        const updatedAt = new Date(Date.parse(client.updatedAt as string) + 3_600_000 + i * 1000).toISOString()
        const body = Buffer.from(JSON.stringify({ ...client, firstName: `W${i}`, updatedAt }))
        const deliveryId = `d${String(i).padStart(24, '0')}`
        const status = await request(`${baseUrl(running.get(to)!)}/webhooks/${account}`, {
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'x-service-event': 'client.updated',
            'x-service-delivery': deliveryId,
            'x-service-signature': sign(SIGNING_SECRET, body),
          },
        }).then(
          async (res) => (await res.body.dump(), res.statusCode),
          () => 0,
        )
        if (status === 200) acked.push({ account, deliveryId, to })
        else refused[`${to} ${status}`] = (refused[`${to} ${status}`] ?? 0) + 1
        await new Promise((r) => setTimeout(r, 40))
      }
    }
    const victims = (await owners(url)).get('r2')!
    const senders = NAMES.map(post)
    await until('deliveries acknowledged by every replica', () => NAMES.every((r) => acked.filter((d) => d.to === r).length >= 20))
    const r2 = running.get('r2')!
    r2.child.kill('SIGKILL')
    await r2.exited
    await until(
      'r2’s accounts owned by r1 and r3',
      async () => {
        const by = ownerOf(await owners(url))
        return victims.every((id) => by.get(id) === 'r1' || by.get(id) === 'r3')
      },
      (LEASE_SECONDS + 10) * 1000,
    )
    await new Promise((r) => setTimeout(r, 2_000))
    posting = false
    await Promise.all(senders)
    running.delete('r2')
    console.log(`webhooks around the SIGKILL: ${acked.length} acknowledged, refused ${JSON.stringify(refused)}`)

    const missing = await until(
      'every acknowledged delivery applied by its owner',
      async () => {
        const by = ownerOf(await owners(url))
        const applied = new Set<string>()
        for (const id of ids()) {
          const owner = by.get(id)
          if (owner === undefined) return undefined
          const db = path.join(dirs.get(owner)!, id, 'mirror.db')
          for (const r of query(db, 'SELECT delivery_id FROM webhook_inbox WHERE processed_at IS NOT NULL'))
            applied.add(`${id} ${r.delivery_id as string}`)
        }
        const left = acked.filter((d) => !applied.has(`${d.account} ${d.deliveryId}`))
        return left.length === 0 ? left : undefined
      },
      60_000,
    ).catch(async () => {
      const by = ownerOf(await owners(url))
      return acked.filter((d) => {
        const db = path.join(dirs.get(by.get(d.account) ?? 'r1')!, d.account, 'mirror.db')
        return query(db, 'SELECT 1 AS x FROM webhook_inbox WHERE delivery_id = ? AND processed_at IS NOT NULL', d.deliveryId).length === 0
      })
    })
    expect(missing.map((d) => `${d.deliveryId} for ${d.account}, acked by ${d.to}`)).toEqual([])
  }, 120_000)

  test('SIGTERM hands over at once; with no replica heartbeating, `fsm-sync replicas` shows every account waiting (exit 1)', async () => {
    const mine = (await owners(url)).get('r3')!
    const r3 = running.get('r3')!
    const t0 = Date.now()
    r3.child.kill('SIGTERM')
    await until(
      'r3’s accounts owned by r1',
      async () => {
        const held = (await owners(url)).get('r1') ?? []
        return mine.every((id) => held.includes(id))
      },
      20_000,
    )
    console.log(`handover after SIGTERM: ${mine.length} accounts owned by r1 ${((Date.now() - t0) / 1000).toFixed(1)} s after the signal`)
    expect(await r3.exited).toEqual({ code: 0, signal: null })
    running.delete('r3')

    const env = cleanEnv({ FSM_CONFIG: file, ...Object.fromEntries(emu.accounts.map((a) => [keyVariable(a), a.apiKey])) })
    const all = await runCli(['replicas', '--json'], env)
    expect(all.code, all.stderr).toBe(0)
    const report = (out: string) => JSON.parse(out) as { replicas: { name: string; state: string }[]; waiting: string[] }
    // r2 was killed: its row stays, silent.
    expect(report(all.stdout).replicas.map((r) => `${r.name} ${r.state}`)).toEqual(['r1 live', 'r2 silent'])
    expect(report(all.stdout).waiting).toEqual([])

    // r1 paused past its leases: nobody holds any account until it wakes.
    const r1 = running.get('r1')!
    const expired = async () =>
      sampleValue(await replicaSamples(r1), 'fsm_replica_accounts_stopped_total', { replica: 'r1', reason: 'expired' })
    const expiredBefore = await expired()
    r1.child.kill('SIGSTOP')
    try {
      await until('r1’s leases lapsed', async () => (await owners(url)).size === 0, (LEASE_SECONDS + 5) * 1000)
      const waiting = await runCli(['replicas', '--json'], env)
      expect(waiting.code).toBe(1)
      expect(report(waiting.stdout).replicas.map((r) => `${r.name} ${r.state}`)).toEqual(['r1 silent', 'r2 silent'])
      expect(report(waiting.stdout).waiting).toEqual([...ids()].sort())
    } finally {
      r1.child.kill('SIGCONT')
    }
    await until('r1 owns every account again', async () => (await owners(url)).get('r1')?.length === ACCOUNTS, 30_000)
    // Its /metrics right after: every account stopped as expired on waking (twice when the heartbeat
    // in flight at the pause acquired them again under its old send time), then taken back.
    expect(sampleValue(await replicaSamples(r1), 'fsm_replica_accounts_owned', { replica: 'r1' })).toBe(ACCOUNTS)
    expect((await expired()) - expiredBefore).toBeGreaterThanOrEqual(ACCOUNTS)
  }, 120_000)
})
