// The shared webhook path of sharded mode against the real Postgres server of the suite: the
// secrets table only the daemon's role reads, sealed with FSM_SECRETS_KEY; a delivery for an account
// this replica does not own, verified with the shared secret and answered 200 only once committed;
// and the owner's relay moving it into its local SQLite inbox exactly once, fenced by its epoch.
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import { InboxRelay } from '../../../src/coordination/inbox-relay.js'
import { acquireLeases, releaseLeases } from '../../../src/coordination/leases.js'
import { registerReplica, type ReplicaIdentity } from '../../../src/coordination/membership.js'
import { SecretsKey } from '../../../src/coordination/secrets-key.js'
import { markTaken, pendingDeliveries, storeDelivery, type PendingDelivery } from '../../../src/coordination/shared-inbox.js'
import { publishSecrets, readSecrets, SharedSecrets } from '../../../src/coordination/shared-secrets.js'
import { ensureWebhookSchema, type WebhookTables } from '../../../src/coordination/webhook-schema.js'
import { createLogger } from '../../../src/log/logger.js'
import { systemClock } from '../../../src/model/clock.js'
import { WebhookInbox } from '../../../src/webhooks/inbox.js'
import { createIntakeHandler } from '../../../src/webhooks/intake-handler.js'
import { activeSecretsOf } from '../../../src/webhooks/secret-store.js'
import { sign } from '../../../src/webhooks/signature.js'
import { createDatabase, POSTGRES_PASSWORD, withDatabase } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const logger = createLogger({ level: 'silent' })
const SECRET = 'whsec_shared_current_0123456789abcdef'
const KEY = 'a-random-key-for-the-replicas-0123456789'
let url: string
let schemas = 0
const closers: (() => Promise<unknown>)[] = []

async function client(connectionString = url): Promise<pg.Client> {
  const c = new pg.Client({ connectionString })
  await c.connect()
  closers.push(() => c.end())
  return c
}

/** A relay's LISTEN connection: the relay ends it. */
async function listenClient(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  return c
}

function pool(max = 4): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max })
  p.on('error', () => undefined)
  closers.push(() => p.end())
  return p
}

async function fresh(): Promise<{ db: pg.Client; c: CoordinationTables; t: WebhookTables }> {
  const db = await client()
  const schema = `webhooks_${schemas++}`
  const c = await ensureCoordinationSchema(db, schema)
  const { tables: t } = await ensureWebhookSchema(db, schema)
  return { db, c, t }
}

const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })
const entry = (secret: string, endpointId = 'ep-1', supersededAt: string | null = null) => ({
  endpointId,
  secret,
  createdAt: '2026-11-01T00:00:00.000Z',
  supersededAt,
})
const delivery = (id: string): { deliveryId: string; event: string; body: Buffer; verifiedWith: string } => ({
  deliveryId: id,
  event: 'client.updated',
  body: Buffer.from(JSON.stringify({ id: `c-${id}`, name: 'Ada' })),
  verifiedWith: 'endpoint ep-1 (current)',
})

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'), 'fsm_shared_webhooks')
})

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined)
})

describe('the shared secrets table', () => {
  test("only the daemon's role reads it, also after a GRANT or default privileges gave it away", async () => {
    const admin = await client()
    const suffix = `${process.pid}_${schemas}`
    const [daemonRole, reader] = [`fsm_daemon_${suffix}`, `fsm_reader_${suffix}`]
    const database = new URL(url).pathname.slice(1)
    await admin.query(`CREATE ROLE ${daemonRole} LOGIN PASSWORD '${POSTGRES_PASSWORD}'`)
    await admin.query(`CREATE ROLE ${reader} LOGIN PASSWORD '${POSTGRES_PASSWORD}'`)
    await admin.query(`GRANT CREATE ON DATABASE "${database}" TO ${daemonRole}`)
    const as = (role: string) => {
      const u = new URL(withDatabase(url, database))
      u.username = role
      return client(u.toString())
    }
    const daemon = await as(daemonRole)
    const schema = `webhooks_${schemas++}`
    // Default privileges the user set for every table the daemon creates: they reach the new table.
    await daemon.query(`ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO ${reader}`)
    await ensureCoordinationSchema(daemon, schema)
    const first = await ensureWebhookSchema(daemon, schema)
    expect(first.revoked).toEqual([reader])
    await publishSecrets(daemon, first.tables, undefined, 'acct-a', [entry(SECRET)])
    // The schema's other tables stay open to what the user grants (fsm-sync replicas as a monitor).
    await daemon.query(`GRANT USAGE ON SCHEMA "${schema}" TO ${reader}`)
    await daemon.query(`GRANT SELECT ON "${schema}".replicas TO ${reader}`)
    await daemon.query(`GRANT SELECT ON "${schema}".webhook_secrets, "${schema}".webhook_inbox TO ${reader}`)
    const other = await as(reader)
    await expect(other.query(`SELECT * FROM "${schema}".replicas`)).resolves.toBeDefined()
    expect((await other.query(`SELECT count(*)::int AS n FROM "${schema}".webhook_secrets`)).rows[0].n).toBe(1)
    // The next start revokes the GRANT.
    const again = await ensureWebhookSchema(daemon, schema)
    expect(again.revoked).toEqual([reader])
    await expect(other.query(`SELECT * FROM "${schema}".webhook_secrets`)).rejects.toMatchObject({ code: '42501' })
    await expect(other.query(`SELECT * FROM "${schema}".webhook_inbox`)).rejects.toMatchObject({ code: '42501' })
    await expect(readSecrets(daemon, again.tables, undefined, 'acct-a')).resolves.toEqual([entry(SECRET)])
  })

  test('sealed with FSM_SECRETS_KEY: the column is not the secret, a wrong or missing key names the variable', async () => {
    const { db, t } = await fresh()
    const key = SecretsKey.fromVariable(KEY)!
    await publishSecrets(db, t, key, 'acct-a', [
      entry(SECRET),
      entry('whsec_previous_abcdef0123456789', 'ep-0', '2026-11-20T00:00:00.000Z'),
    ])
    const raw = (await db.query<{ secrets: Buffer; encrypted: boolean }>(`SELECT secrets, encrypted FROM ${t.secrets}`)).rows[0]!
    expect(raw.encrypted).toBe(true)
    expect(raw.secrets.includes(Buffer.from(SECRET))).toBe(false)
    expect(raw.secrets.includes(Buffer.from('whsec_'))).toBe(false)
    expect((await readSecrets(db, t, key, 'acct-a'))!.map((e) => e.secret)).toEqual([SECRET, 'whsec_previous_abcdef0123456789'])

    const wrong = await readSecrets(db, t, SecretsKey.fromVariable(`${KEY}-other`), 'acct-a').catch((e: unknown) => e as Error)
    expect(wrong).toMatchObject({ code: 'SECRETS_KEY_WRONG' })
    expect((wrong as Error).message).toContain('FSM_SECRETS_KEY')
    expect((wrong as Error).message).not.toContain(SECRET)
    await expect(readSecrets(db, t, undefined, 'acct-a')).rejects.toMatchObject({ code: 'SECRETS_KEY_MISSING' })
    // A sealed value copied onto another account does not open: the account id is bound to it.
    await db.query(`INSERT INTO ${t.secrets} (account_id, secrets, encrypted) SELECT 'acct-b', secrets, true FROM ${t.secrets}`)
    await expect(readSecrets(db, t, key, 'acct-b')).rejects.toMatchObject({ code: 'SECRETS_KEY_WRONG' })
  })
})

describe("a reader's cache of the shared secrets", () => {
  test('the owner publishes only a change, and a NOTIFY brings it to the readers', async () => {
    const { db, c, t } = await fresh()
    const owner = new SharedSecrets({ db, tables: t, key: undefined, clock: systemClock })
    const reader = new SharedSecrets({ db: pool(), tables: t, key: undefined, clock: systemClock, ttlMs: 3_600_000 })
    expect(await owner.publish('acct-a', [entry(SECRET)])).toBe(true)
    expect(await owner.publish('acct-a', [entry(SECRET)])).toBe(false)
    expect(await reader.refresh('acct-a')).toEqual([entry(SECRET)])
    const changed: string[] = []
    const relay = new InboxRelay({
      db,
      connect: listenClient,
      coordination: c,
      tables: t,
      me: replica('reader'),
      epochOf: () => undefined,
      deliver: () => Promise.resolve(),
      onSecretsChanged: (a) => {
        changed.push(a)
        reader.invalidate(a)
      },
      onError: () => undefined,
      clock: systemClock,
    })
    closers.push(() => relay.stop())
    await relay.start()
    const rotated = [entry(SECRET, 'ep-1', '2026-11-27T00:00:00.000Z'), entry('whsec_rotated_9876543210', 'ep-2')]
    expect(await owner.publish('acct-a', rotated)).toBe(true)
    while (changed.length === 0) await new Promise((r) => setTimeout(r, 10))
    expect(changed).toEqual(['acct-a'])
    // Invalidated: the next use starts a read, and the one after sees the rotation.
    expect(reader.cached('acct-a')).toEqual([])
    while (reader.cached('acct-a').length === 0) await new Promise((r) => setTimeout(r, 10))
    expect(reader.cached('acct-a')).toEqual(rotated)
    await relay.stop()
  })
})

/** An intake for `accountId` as a replica that does not own it serves it: shared secrets, shared inbox. */
async function relayIntake(db: pg.Pool, t: WebhookTables, accountId: string, key?: SecretsKey) {
  const shared = new SharedSecrets({ db, tables: t, key, clock: systemClock, minRefreshMs: 0 })
  const handler = createIntakeHandler({
    inbox: { enqueue: (d) => storeDelivery(db, t, accountId, d) },
    secrets: () => activeSecretsOf(shared.cached(accountId), Date.now(), 24),
    refreshSecrets: async () => activeSecretsOf(await shared.refresh(accountId), Date.now(), 24),
    maxBodyBytes: 1 << 20,
    bodyTimeoutMs: 10_000,
    maxBufferedBytes: 32 << 20,
    logger,
    now: Date.now,
  })
  const server = http.createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise((resolve) => server.close(resolve)))
  const port = (server.address() as AddressInfo).port
  const post = async (id: string, secret = SECRET, body = delivery(id).body) => {
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/${accountId}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'client.updated',
        'x-service-delivery': id,
        'x-service-signature': sign(secret, body),
      },
      body,
    })
    const json: unknown = await res.json()
    return { status: res.status, body: json }
  }
  return { shared, post }
}

const count = async (db: pg.ClientBase | pg.Pool, t: WebhookTables) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.inbox}`)).rows[0]!.n

describe('a delivery for an account this replica does not own', () => {
  test('is verified with the shared secret and stored once in Postgres; a wrong signature stores nothing', async () => {
    const { db, t } = await fresh()
    const key = SecretsKey.fromVariable(KEY)!
    await publishSecrets(db, t, key, 'acct-a', [entry(SECRET)])
    const { post } = await relayIntake(pool(), t, 'acct-a', key)
    expect(await post('d-1')).toEqual({ status: 200, body: { received: true } })
    expect(await post('d-1')).toEqual({ status: 200, body: { received: true, duplicate: true } })
    expect(await post('d-2', 'whsec_forged_0000000000000000')).toMatchObject({ status: 401 })
    const rows = await db.query(`SELECT account_id, delivery_id, event, body, taken_at FROM ${t.inbox}`)
    expect(rows.rows).toEqual([
      { account_id: 'acct-a', delivery_id: 'd-1', event: 'client.updated', body: delivery('d-1').body, taken_at: null },
    ])
    // A rotation the owner published reaches a delivery signed with the new secret, NOTIFY or not.
    await publishSecrets(db, t, key, 'acct-a', [
      entry(SECRET, 'ep-1', '2026-11-27T00:00:00.000Z'),
      entry('whsec_rotated_9876543210', 'ep-2'),
    ])
    expect(await post('d-3', 'whsec_rotated_9876543210')).toMatchObject({ status: 200 })
    expect(await count(db, t)).toBe(2)
  })

  test('the answer waits for the commit; a connection killed before it is not a 200', async () => {
    const { db, t } = await fresh()
    await publishSecrets(db, t, undefined, 'acct-a', [entry(SECRET)])
    const intakePool = pool(1)
    const { post } = await relayIntake(intakePool, t, 'acct-a')
    const blocker = await client()
    /** Holds the delivery's key in an open transaction: the intake's insert waits on it. */
    const block = async (id: string) => {
      await blocker.query('BEGIN')
      await blocker.query(
        `INSERT INTO ${t.inbox} (account_id, delivery_id, event, body, verified_with) VALUES ('acct-a', $1, 'x', '', 'x')`,
        [id],
      )
    }
    const waitingPid = async (): Promise<number> => {
      for (;;) {
        const r = await db.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhook_inbox%' AND pid <> pg_backend_pid()`,
        )
        if (r.rows[0] !== undefined) return r.rows[0].pid
        await new Promise((r) => setTimeout(r, 20))
      }
    }
    await block('d-1')
    let answered: { status: number } | undefined
    const pending = post('d-1').then((r) => (answered = r))
    await waitingPid()
    expect(answered).toBeUndefined()
    await blocker.query('ROLLBACK')
    expect(await pending).toEqual({ status: 200, body: { received: true } })

    await block('d-2')
    const killed = post('d-2')
    await db.query('SELECT pg_terminate_backend($1)', [await waitingPid()])
    expect((await killed).status).toBe(503)
    await blocker.query('ROLLBACK')
    expect((await db.query(`SELECT delivery_id FROM ${t.inbox} ORDER BY 1`)).rows).toEqual([{ delivery_id: 'd-1' }])
  })
})

describe("the owner's relay", () => {
  let mirror: TempMirror
  beforeAll(async () => {
    mirror = await tempMirror()
    closers.push(() => mirror.dispose())
  })

  /** The owner's local inbox: each delivery enqueued, resolved once durable there. */
  function localInbox() {
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 100_000, logger })
    const results: string[] = []
    const deliver = async (_accountId: string, rows: readonly PendingDelivery[]) => {
      for (const r of await Promise.all(rows.map((d) => inbox.enqueue(d)))) results.push(r)
    }
    return { inbox, results, deliver }
  }
  const localIds = (prefix: string) =>
    mirror.sqlite
      .prepare(`SELECT delivery_id FROM webhook_inbox WHERE delivery_id LIKE ? ORDER BY seq`)
      .pluck()
      .all(`${prefix}%`) as string[]

  test('moves 200 deliveries into the local inbox promptly, each once (ack to local inbox p99 under 2 s)', async () => {
    const { db, c, t } = await fresh()
    const owner = replica('owner')
    await registerReplica(db, c, owner)
    const [lease] = await acquireLeases(db, c, owner, ['acct-a'], 60_000)
    const errors: unknown[] = []
    const acked = new Map<string, number>()
    const arrived = new Map<string, number>()
    const local = localInbox()
    const relay = new InboxRelay({
      db: pool(),
      connect: listenClient,
      coordination: c,
      tables: t,
      me: owner,
      epochOf: (a) => (a === 'acct-a' ? lease!.epoch : undefined),
      deliver: async (a, rows) => {
        await local.deliver(a, rows)
        for (const r of rows) if (!arrived.has(r.deliveryId)) arrived.set(r.deliveryId, performance.now())
      },
      onError: (err) => errors.push(err),
      clock: systemClock,
    })
    closers.push(() => relay.stop())
    await relay.start()
    const other = pool()
    for (let i = 0; i < 200; i++) {
      const id = `p-${String(i).padStart(3, '0')}`
      expect(await storeDelivery(other, t, 'acct-a', delivery(id))).toBe('stored')
      acked.set(id, performance.now())
      // Spread like live traffic, not one burst.
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 5))
    }
    while (arrived.size < 200) await new Promise((r) => setTimeout(r, 10))
    const lags = [...acked].map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b)
    const p = (q: number) => lags[Math.min(lags.length - 1, Math.ceil(q * lags.length) - 1)]!.toFixed(1)
    console.log(`shared inbox, ack to local inbox over 200 deliveries: p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms`)
    expect(localIds('p-')).toEqual([...acked.keys()])
    while ((await pendingDeliveries(db, t, 'acct-a', 10)).length > 0) await new Promise((r) => setTimeout(r, 10))
    expect((await db.query(`SELECT DISTINCT taken_epoch::int AS e FROM ${t.inbox}`)).rows).toEqual([{ e: lease!.epoch }])
    await relay.stop()
    expect(errors).toEqual([])
  })

  test('a dropped LISTEN connection: the sweep and a reconnect still move what arrives', async () => {
    const { db, c, t } = await fresh()
    const owner = replica('owner')
    await registerReplica(db, c, owner)
    const [lease] = await acquireLeases(db, c, owner, ['acct-a'], 60_000)
    const local = localInbox()
    const errors: unknown[] = []
    const relay = new InboxRelay({
      db: pool(),
      connect: listenClient,
      coordination: c,
      tables: t,
      me: owner,
      epochOf: (a) => (a === 'acct-a' ? lease!.epoch : undefined),
      deliver: local.deliver,
      onError: (err) => errors.push(err),
      clock: systemClock,
      sweepMs: 200,
    })
    closers.push(() => relay.stop())
    await relay.start()
    const listeners = async () =>
      (
        await db.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`,
        )
      ).rows
    // Only this test's relay listens on this database now.
    const [listening] = await listeners()
    await db.query('SELECT pg_terminate_backend($1)', [listening!.pid])
    await storeDelivery(db, t, 'acct-a', delivery('r-1'))
    while (localIds('r-').length === 0) await new Promise((r) => setTimeout(r, 20))
    // It listens again: a later delivery needs no sweep.
    while ((await listeners()).length === 0) await new Promise((r) => setTimeout(r, 20))
    await storeDelivery(db, t, 'acct-a', delivery('r-2'))
    while (localIds('r-').length < 2) await new Promise((r) => setTimeout(r, 20))
    await relay.stop()
    expect(errors.length).toBeGreaterThan(0)
    expect(localIds('r-')).toEqual(['r-1', 'r-2'])
  })

  test('a crash between the local insert and the mark moves the rows again, and the local inbox keeps each once', async () => {
    const { db, c, t } = await fresh()
    const owner = replica('owner')
    await registerReplica(db, c, owner)
    const [lease] = await acquireLeases(db, c, owner, ['acct-a'], 60_000)
    for (const id of ['k-1', 'k-2']) await storeDelivery(db, t, 'acct-a', delivery(id))
    const local = localInbox()
    const relay = (deliver: (a: string, rows: readonly PendingDelivery[]) => Promise<void>) =>
      new InboxRelay({
        db,
        connect: listenClient,
        coordination: c,
        tables: t,
        me: owner,
        epochOf: () => lease!.epoch,
        deliver,
        onError: () => undefined,
        clock: systemClock,
      })
    // The process dies once the rows are durable locally, before it marks them.
    await expect(
      relay(async (a, rows) => {
        await local.deliver(a, rows)
        throw new Error('killed')
      }).drain('acct-a'),
    ).rejects.toThrow('killed')
    expect(await pendingDeliveries(db, t, 'acct-a', 10)).toHaveLength(2)
    expect(await relay(local.deliver).drain('acct-a')).toBe(2)
    expect(local.results).toEqual(['stored', 'stored', 'duplicate', 'duplicate'])
    expect(localIds('k-')).toEqual(['k-1', 'k-2'])
    expect(await pendingDeliveries(db, t, 'acct-a', 10)).toEqual([])
  })

  test("only the lease's current epoch marks rows; a new owner replays what the old one took recently", async () => {
    const { db, c, t } = await fresh()
    const [a, b] = [replica('a'), replica('b')]
    for (const r of [a, b]) await registerReplica(db, c, r)
    const [first] = await acquireLeases(db, c, a, ['acct-a'], 60_000)
    for (const id of ['e-1', 'e-2']) await storeDelivery(db, t, 'acct-a', delivery(id))
    expect(await markTaken(db, c, t, a, 'acct-a', first!.epoch, ['e-1'])).toBe(1)
    await releaseLeases(db, c, a)
    const [second] = await acquireLeases(db, c, b, ['acct-a'], 60_000)
    expect(second!.epoch).toBe(first!.epoch + 1)
    // The old owner, not yet aware, cannot mark e-2: it stays for the new owner.
    expect(await markTaken(db, c, t, a, 'acct-a', first!.epoch, ['e-2'])).toBe(0)
    const moved: string[] = []
    const relay = new InboxRelay({
      db,
      connect: listenClient,
      coordination: c,
      tables: t,
      me: b,
      epochOf: () => second!.epoch,
      deliver: (_a, rows) => {
        moved.push(...rows.map((r) => r.deliveryId))
        return Promise.resolve()
      },
      onError: () => undefined,
      clock: systemClock,
    })
    expect(await relay.takeOver('acct-a', second!.epoch)).toBe(2)
    expect(moved).toEqual(['e-1', 'e-2'])
    expect((await db.query(`SELECT delivery_id, taken_epoch::int AS e FROM ${t.inbox} ORDER BY 1`)).rows).toEqual([
      { delivery_id: 'e-1', e: second!.epoch },
      { delivery_id: 'e-2', e: second!.epoch },
    ])
  })
})
