// Account leases with fencing epochs (docs/sharding.md, Leases). A lease row names the owner, its
// incarnation and an epoch that grows whenever the owner changes; expiry is judged by the server's
// clock alone. Every function is one statement, whatever the number of accounts.
import type { CoordinationTables, Queryable } from './coordination-schema.js'
import { LeaseLost } from './lease-lost.js'
import type { ReplicaIdentity } from './membership.js'

export interface Lease {
  accountId: string
  epoch: number
}

export interface LeaseRow {
  accountId: string
  owner: string | null
  epoch: number
  /** Milliseconds until it expires by the server's clock; negative once expired. */
  remainingMs: number
}

const MINE = 'l.owner = $2 AND l.incarnation = $3::uuid'

/**
 * Takes the leases of `accountIds` that are free, expired or already mine, for `ttlMs` from the
 * server's now; returns those held. A takeover locks the row `FOR UPDATE`, so it waits for every
 * writer's transaction that checked the old lease (assertLease) to end first.
 */
export async function acquireLeases(
  db: Queryable,
  t: CoordinationTables,
  me: ReplicaIdentity,
  accountIds: readonly string[],
  ttlMs: number,
): Promise<Lease[]> {
  if (accountIds.length === 0) return []
  // Rows for accounts never leased: free, expired, epoch 0 (the first owner's epoch is 1).
  await db.query(
    `INSERT INTO ${t.leases} (account_id, epoch, expires_at) SELECT a, 0, to_timestamp(0) FROM unnest($1::text[]) AS a
     ON CONFLICT (account_id) DO NOTHING`,
    [accountIds],
  )
  // In account order, so two replicas taking overlapping sets lock rows in the same order.
  const r = await db.query<{ account_id: string; epoch: string }>(
    `UPDATE ${t.leases} l SET
       epoch = CASE WHEN ${MINE} THEN l.epoch ELSE l.epoch + 1 END,
       acquired_at = CASE WHEN ${MINE} THEN l.acquired_at ELSE now() END,
       owner = $2, incarnation = $3::uuid, expires_at = now() + $4 * interval '1 millisecond'
     FROM (SELECT account_id FROM ${t.leases} WHERE account_id = ANY($1::text[]) ORDER BY account_id FOR UPDATE) x
     WHERE l.account_id = x.account_id AND (l.owner IS NULL OR l.expires_at <= now() OR (${MINE}))
     RETURNING l.account_id, l.epoch`,
    [accountIds, me.name, me.incarnation, ttlMs],
  )
  return r.rows.map(toLease).sort(byAccount)
}

/**
 * Extends every unexpired lease of mine by `ttlMs` from the server's now, in one statement; returns
 * those still held. A lease missing from the answer has expired or been taken: stop acting on it.
 */
export async function renewLeases(db: Queryable, t: CoordinationTables, me: ReplicaIdentity, ttlMs: number): Promise<Lease[]> {
  const r = await db.query<{ account_id: string; epoch: string }>(
    `UPDATE ${t.leases} l SET expires_at = now() + $1 * interval '1 millisecond'
     WHERE l.owner = $2 AND l.incarnation = $3::uuid AND l.expires_at > now()
     RETURNING l.account_id, l.epoch`,
    [ttlMs, me.name, me.incarnation],
  )
  return r.rows.map(toLease).sort(byAccount)
}

/**
 * Gives up my leases of `accountIds` (all of them when omitted) at once, so a new owner need not
 * wait for them to lapse. Call it after the accounts' runtimes have stopped. Returns those released.
 */
export async function releaseLeases(
  db: Queryable,
  t: CoordinationTables,
  me: ReplicaIdentity,
  accountIds?: readonly string[],
): Promise<string[]> {
  const r = await db.query<{ account_id: string }>(
    `UPDATE ${t.leases} l SET owner = NULL, incarnation = NULL, expires_at = now()
     WHERE l.owner = $1 AND l.incarnation = $2::uuid AND ($3::text[] IS NULL OR l.account_id = ANY($3::text[]))
     RETURNING l.account_id`,
    [me.name, me.incarnation, accountIds ?? null],
  )
  return r.rows.map((x) => x.account_id).sort()
}

/**
 * The fencing check: the last statement before COMMIT of a transaction that writes for `accountId`. It locks the
 * lease row `FOR KEY SHARE` (renewals go on; a takeover waits for this transaction to end) and
 * throws LeaseLost unless `owner` holds it at `epoch`, unexpired by the server's clock.
 */
export async function assertLease(db: Queryable, t: CoordinationTables, accountId: string, owner: string, epoch: number): Promise<void> {
  const r = await db.query<{ owner: string | null; epoch: string; expired: boolean }>(
    `SELECT owner, epoch, expires_at <= clock_timestamp() AS expired FROM ${t.leases} WHERE account_id = $1 FOR KEY SHARE`,
    [accountId],
  )
  const row = r.rows[0]
  const found = row === undefined ? undefined : { owner: row.owner, epoch: Number(row.epoch), expired: row.expired }
  if (found === undefined || found.owner !== owner || found.epoch !== epoch || found.expired)
    throw new LeaseLost(accountId, { owner, epoch }, found)
}

/** Every lease row, by account: for `fsm-sync replicas` and the tests. */
export async function listLeases(db: Queryable, t: CoordinationTables): Promise<LeaseRow[]> {
  const r = await db.query<{ account_id: string; owner: string | null; epoch: string; remaining_ms: string }>(
    `SELECT account_id, owner, epoch, floor(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint AS remaining_ms
     FROM ${t.leases} ORDER BY account_id`,
  )
  return r.rows.map((x) => ({ accountId: x.account_id, owner: x.owner, epoch: Number(x.epoch), remainingMs: Number(x.remaining_ms) }))
}

const toLease = (x: { account_id: string; epoch: string }): Lease => ({ accountId: x.account_id, epoch: Number(x.epoch) })
const byAccount = (a: Lease, b: Lease) => (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0)
