// The shared webhook inbox against the real Postgres server of the suite: a delivery for an account
// this replica does not own, verified with the shared secret and answered 200 only once committed;
// and the owner's relay moving it into its local SQLite inbox exactly once, fenced by its epoch.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type pg from 'pg'
import { beforeAll, describe, expect, test } from 'vitest'
import { InboxRelay, type InboxRelayOptions } from '../../../src/coordination/inbox-relay.js'
import { acquireLeases, releaseLeases } from '../../../src/coordination/leases.js'
import { registerReplica } from '../../../src/coordination/membership.js'
import { SecretsKey } from '../../../src/coordination/secrets-key.js'
import { markTaken, pendingDeliveries, pruneTaken, storeDelivery, type PendingDelivery } from '../../../src/coordination/shared-inbox.js'
import { publishSecrets, SharedSecrets } from '../../../src/coordination/shared-secrets.js'
import type { WebhookTables } from '../../../src/coordination/webhook-schema.js'
import { createLogger } from '../../../src/log/logger.js'
import { systemClock } from '../../../src/model/clock.js'
import { WebhookInbox } from '../../../src/webhooks/inbox.js'
import { createIntakeHandler } from '../../../src/webhooks/intake-handler.js'
import { activeSecretsOf } from '../../../src/webhooks/secret-store.js'
import { sign } from '../../../src/webhooks/signature.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'
import { delivery, entry, KEY, replica, SECRET, sharedWebhooksEnv } from './shared-webhooks-env.js'

const logger = createLogger({ level: 'silent' })
const env = sharedWebhooksEnv('fsm_shared_inbox')
const { client, closers, fresh, listenClient, pool } = env

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
    const relay = (deliver: (a: string, rows: readonly PendingDelivery[]) => Promise<void>, more: Partial<InboxRelayOptions> = {}) =>
      new InboxRelay({
        ...more,
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
    // Taken rows go after the replay window, at a sweep; one still waiting never does.
    await storeDelivery(db, t, 'acct-a', delivery('k-3'))
    expect(await pruneTaken(db, t, 60_000)).toBe(0)
    await relay(local.deliver, { replayMs: 0, keepTakenMs: 0 }).sweep()
    expect((await db.query(`SELECT delivery_id, taken_at IS NOT NULL AS taken FROM ${t.inbox}`)).rows).toEqual([
      { delivery_id: 'k-3', taken: true },
    ])
    expect(localIds('k-')).toEqual(['k-1', 'k-2', 'k-3'])
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
