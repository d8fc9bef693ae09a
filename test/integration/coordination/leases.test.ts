// Membership and leases against the real Postgres server of the suite: liveness and expiry by the
// server's clock, fencing epochs across takeovers, one statement for a thousand renewals, racing
// acquirers and the fencing check a writer's transaction runs first.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import { LeaseLost } from '../../../src/coordination/lease-lost.js'
import { acquireLeases, assertLease, listLeases, releaseLeases, renewLeases } from '../../../src/coordination/leases.js'
import {
  deregister,
  heartbeat,
  listReplicas,
  liveReplicas,
  markStopping,
  registerReplica,
  type ReplicaIdentity,
} from '../../../src/coordination/membership.js'
import { createDatabase } from '../../support/postgres-server.js'

let url: string
const clients: pg.Client[] = []
let schemas = 0

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  clients.push(c)
  return c
}

/** A fresh coordination schema for one test, so tests never see each other's rows. */
async function fresh(): Promise<{ db: pg.Client; t: CoordinationTables }> {
  const db = await client()
  const t = await ensureCoordinationSchema(db, `coord_${schemas++}`)
  return { db, t }
}

const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })
const ids = (n: number, prefix = 'acct') => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`)

/** Waits, by polling the server's clock, until every lease of `accounts` has expired there. */
async function untilExpired(db: pg.Client, t: CoordinationTables, accounts: readonly string[]): Promise<void> {
  for (;;) {
    const rows = (await listLeases(db, t)).filter((l) => accounts.includes(l.accountId))
    if (rows.every((l) => l.remainingMs < 0)) return
    await new Promise((r) => setTimeout(r, 100))
  }
}

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'), 'fsm_coord')
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()))
})

describe('the coordination schema', () => {
  test('replicas starting together all create it, and again at every start', async () => {
    const dbs = await Promise.all(Array.from({ length: 6 }, () => client()))
    const schema = `coord_${schemas++}`
    await Promise.all(dbs.map((d) => ensureCoordinationSchema(d, schema)))
    const t = await ensureCoordinationSchema(dbs[0]!, schema)
    expect(await listLeases(dbs[0]!, t)).toEqual([])
  })
})

describe('membership', () => {
  test('live means a heartbeat within the lease time by the server clock, and not stopping', async () => {
    const { db, t } = await fresh()
    const [a, b, c] = [replica('a'), replica('b'), replica('c')]
    for (const r of [a, b, c]) await registerReplica(db, t, r)
    expect(await liveReplicas(db, t, 1_500)).toEqual(['a', 'b', 'c'])
    await markStopping(db, t, c)
    expect(await liveReplicas(db, t, 1_500)).toEqual(['a', 'b'])
    // b stays silent past the lease while a heartbeats.
    for (;;) {
      expect(await heartbeat(db, t, a)).toBe(true)
      const silent = (await listReplicas(db, t)).find((r) => r.name === 'b')!.silentMs
      if (silent > 1_500) break
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(await liveReplicas(db, t, 1_500)).toEqual(['a'])
    expect(await heartbeat(db, t, b)).toBe(true)
    expect(await liveReplicas(db, t, 1_500)).toEqual(['a', 'b'])
    await deregister(db, t, c)
    expect((await listReplicas(db, t)).map((r) => r.name)).toEqual(['a', 'b'])
  })

  test('a second process under the same name displaces the first, whose heartbeat then fails', async () => {
    const { db, t } = await fresh()
    const first = replica('pod-0')
    const second = { ...first, incarnation: randomUUID() }
    await registerReplica(db, t, first)
    await registerReplica(db, t, second)
    expect(await heartbeat(db, t, first)).toBe(false)
    expect(await heartbeat(db, t, second)).toBe(true)
  })
})

describe('leases', () => {
  test('acquire takes free leases and keeps mine; the epoch grows only when the owner changes', async () => {
    const { db, t } = await fresh()
    const [a, b] = [replica('a'), replica('b')]
    expect(await acquireLeases(db, t, a, ['x', 'y'], 10_000)).toEqual([
      { accountId: 'x', epoch: 1 },
      { accountId: 'y', epoch: 1 },
    ])
    expect(await acquireLeases(db, t, b, ['x', 'y', 'z'], 10_000)).toEqual([{ accountId: 'z', epoch: 1 }])
    expect(await acquireLeases(db, t, a, ['x'], 10_000)).toEqual([{ accountId: 'x', epoch: 1 }])
    // A graceful release hands over at once, and the next owner's epoch is higher.
    expect(await releaseLeases(db, t, a, ['x'])).toEqual(['x'])
    expect(await acquireLeases(db, t, b, ['x', 'y'], 10_000)).toEqual([{ accountId: 'x', epoch: 2 }])
    // A restart under the same name is another incarnation: another epoch.
    const a2 = { ...a, incarnation: randomUUID() }
    expect(await releaseLeases(db, t, a)).toEqual(['y'])
    expect(await acquireLeases(db, t, a2, ['y'], 10_000)).toEqual([{ accountId: 'y', epoch: 2 }])
    expect((await listLeases(db, t)).map((l) => [l.accountId, l.owner, l.epoch])).toEqual([
      ['x', 'b', 2],
      ['y', 'a', 2],
      ['z', 'b', 1],
    ])
  })

  test('a lease not renewed expires by the server clock; then another replica takes it at the next epoch', async () => {
    const { db, t } = await fresh()
    const [a, b] = [replica('a'), replica('b')]
    await acquireLeases(db, t, a, ['x', 'y'], 2_000)
    expect(await acquireLeases(db, t, b, ['x'], 2_000)).toEqual([])
    // Neither is renewed, so both lapse by the server's clock: a renewal no longer extends them, but
    // the owner may take one back at the same epoch while nobody else has.
    await untilExpired(db, t, ['x', 'y'])
    expect(await renewLeases(db, t, a, 1_000)).toEqual([])
    expect(await acquireLeases(db, t, a, ['y'], 2_000)).toEqual([{ accountId: 'y', epoch: 1 }])
    expect(await acquireLeases(db, t, b, ['x', 'y'], 2_000)).toEqual([{ accountId: 'x', epoch: 2 }])
    expect(await renewLeases(db, t, a, 2_000)).toEqual([{ accountId: 'y', epoch: 1 }])
  })

  test('1,000 leases are acquired, renewed and released in one statement each', async () => {
    const { db, t } = await fresh()
    const a = replica('a')
    const accounts = ids(1_000)
    expect(await acquireLeases(db, t, a, accounts, 10_000)).toHaveLength(1_000)
    // Every statement goes through this wrapper: the renewal must be one, not one per account.
    let statements = 0
    const counted = {
      query: ((...args: Parameters<pg.Client['query']>) => {
        statements++
        return (db.query as (...a: unknown[]) => unknown)(...args)
      }) as pg.Client['query'],
    }
    const renewed = await renewLeases(counted, t, a, 10_000)
    expect(renewed).toHaveLength(1_000)
    expect(statements).toBe(1)
    expect(await releaseLeases(db, t, a)).toHaveLength(1_000)
  })

  test('three replicas racing for the same accounts, new or expired: exactly one wins each, every round', async () => {
    const { db, t } = await fresh()
    const dbs = await Promise.all([client(), client(), client()])
    const rs = [replica('a'), replica('b'), replica('c')]
    for (let round = 0; round < 20; round++) {
      const accounts = ids(5, `race${round}`)
      // Odd rounds race for leases another replica held and let lapse: the takeover path.
      const takeover = round % 2 === 1
      if (takeover) {
        await acquireLeases(db, t, replica('z'), accounts, 1)
        await untilExpired(db, t, accounts)
      }
      const won = await Promise.all(
        rs.map((r, i) => acquireLeases(dbs[i]!, t, r, round % 4 < 2 ? accounts : [...accounts].reverse(), 10_000)),
      )
      for (const a of accounts) expect(won.filter((w) => w.some((l) => l.accountId === a))).toHaveLength(1)
      const rows = (await listLeases(db, t)).filter((l) => accounts.includes(l.accountId))
      expect(rows.map((l) => l.epoch)).toEqual(accounts.map(() => (takeover ? 2 : 1)))
    }
  })
})

describe('fencing', () => {
  test("a takeover waits for the old owner's checked transaction; after it, the old owner's check fails", async () => {
    const { db, t } = await fresh()
    const oldOwner = await client()
    const newOwner = await client()
    const [a, b] = [replica('a'), replica('b')]
    // Long enough for the steps below on a loaded machine; the renewal then shortens it to 1 s.
    const [lease] = await acquireLeases(db, t, a, ['x'], 5_000)
    await db.query(`CREATE TABLE ${t.schema}.writes (account_id text, epoch bigint)`)

    await oldOwner.query('BEGIN')
    await assertLease(oldOwner, t, 'x', 'a', lease!.epoch)
    // The lease lapses while the old owner's transaction is open; a renewal is not blocked by it.
    expect(await renewLeases(db, t, a, 1_000)).toEqual([{ accountId: 'x', epoch: 1 }])
    await untilExpired(db, t, ['x'])
    const events: string[] = []
    const takeover = acquireLeases(newOwner, t, b, ['x'], 10_000).then((l) => {
      events.push('acquired')
      return l
    })
    // The acquire reaches the row lock and waits there while the old owner's transaction is open.
    const waiters = async () =>
      (
        await db.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%account_leases%'`,
        )
      ).rowCount
    for (let i = 0; i < 100 && (await waiters()) === 0 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    await oldOwner.query(`INSERT INTO ${t.schema}.writes VALUES ('x', $1)`, [lease!.epoch])
    expect(await waiters()).toBe(1)
    expect(events).toEqual([])
    // The commit frees it. (Which of the two answers the client reads first is not the server's order.)
    await oldOwner.query('COMMIT')
    expect(await takeover).toEqual([{ accountId: 'x', epoch: 2 }])
    expect((await newOwner.query(`SELECT epoch FROM ${t.schema}.writes`)).rows).toEqual([{ epoch: '1' }])

    await oldOwner.query('BEGIN')
    const err = await assertLease(oldOwner, t, 'x', 'a', lease!.epoch).catch((e: unknown) => e)
    await oldOwner.query('ROLLBACK')
    expect(err).toBeInstanceOf(LeaseLost)
    expect(err).toMatchObject({ code: 'LEASE_LOST', accountId: 'x', found: { owner: 'b', epoch: 2, expired: false } })
    await assertLease(newOwner, t, 'x', 'b', 2)
  })

  test('the check refuses an expired lease, a missing one and a stale epoch', async () => {
    const { db, t } = await fresh()
    const a = replica('a')
    await acquireLeases(db, t, a, ['x'], 2_000)
    await expect(assertLease(db, t, 'x', 'a', 7)).rejects.toMatchObject({ found: { owner: 'a', epoch: 1 } })
    await expect(assertLease(db, t, 'nope', 'a', 1)).rejects.toMatchObject({ code: 'LEASE_LOST', found: undefined })
    await assertLease(db, t, 'x', 'a', 1)
    await untilExpired(db, t, ['x'])
    await expect(assertLease(db, t, 'x', 'a', 1)).rejects.toMatchObject({ found: { owner: 'a', epoch: 1, expired: true } })
  })
})
