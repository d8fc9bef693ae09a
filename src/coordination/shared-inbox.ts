// The shared webhook inbox (docs/sharding.md, Webhooks): a replica that takes a delivery for an
// account it does not own stores it here, committed with synchronous_commit on before its 200, and
// notifies the replicas; the owner moves the account's rows into its local inbox and marks them
// taken under its lease epoch. Every function is one statement.
import type { CoordinationTables, Queryable } from './coordination-schema.js'
import type { ReplicaIdentity } from './membership.js'
import type { WebhookTables } from './webhook-schema.js'

/** A verified delivery, as the intake hands it over (the local inbox's shape). */
export interface SharedDelivery {
  deliveryId: string
  event: string
  body: Buffer
  verifiedWith: string
}

export interface PendingDelivery extends SharedDelivery {
  accountId: string
  /** Milliseconds since it was stored, by the server's clock. */
  ageMs: number
}

/**
 * Stores a delivery and notifies `inboxChannel` with the account id, in one transaction whose
 * commit waits for the server's WAL flush whatever the server's or the role's setting
 * (set_config(..., true) lasts until that commit). 'duplicate': this account already had the id.
 */
export async function storeDelivery(
  db: Queryable,
  t: WebhookTables,
  accountId: string,
  d: SharedDelivery,
): Promise<'stored' | 'duplicate'> {
  const r = await db.query(
    `WITH sync AS (SELECT set_config('synchronous_commit', 'on', true) AS v),
     ins AS (
       INSERT INTO ${t.inbox} (account_id, delivery_id, event, body, verified_with)
       SELECT $1, $2, $3, $4, $5 FROM sync
       ON CONFLICT (account_id, delivery_id) DO NOTHING
       RETURNING account_id)
     SELECT pg_notify($6, account_id) FROM ins`,
    [accountId, d.deliveryId, d.event, d.body, d.verifiedWith, t.inboxChannel],
  )
  return r.rowCount === 1 ? 'stored' : 'duplicate'
}

/**
 * The account's deliveries not taken yet, oldest first. `replayBeforeEpoch`: also those taken under
 * an earlier epoch within `replayMs` (a takeover: the old owner may have died before applying them).
 */
export async function pendingDeliveries(
  db: Queryable,
  t: WebhookTables,
  accountId: string,
  limit: number,
  replay?: { beforeEpoch: number; withinMs: number },
): Promise<PendingDelivery[]> {
  const r = await db.query<{ delivery_id: string; event: string; body: Buffer; verified_with: string; age_ms: string }>(
    `SELECT delivery_id, event, body, verified_with, floor(extract(epoch FROM clock_timestamp() - received_at) * 1000)::bigint AS age_ms
     FROM ${t.inbox}
     WHERE account_id = $1 AND (taken_at IS NULL
       OR ($3::bigint IS NOT NULL AND taken_epoch < $3 AND taken_at > clock_timestamp() - $4 * interval '1 millisecond'))
     ORDER BY received_at, delivery_id LIMIT $2`,
    [accountId, limit, replay?.beforeEpoch ?? null, replay?.withinMs ?? 0],
  )
  return r.rows.map((x) => ({
    accountId,
    deliveryId: x.delivery_id,
    event: x.event,
    body: x.body,
    verifiedWith: x.verified_with,
    ageMs: Number(x.age_ms),
  }))
}

/**
 * Marks deliveries taken by `me` at `epoch`, only while `me` holds the account's lease at that epoch,
 * unexpired by the server's clock; returns how many were marked (0 once the lease is lost). A row
 * already taken at this epoch or a later one stays as it is.
 */
export async function markTaken(
  db: Queryable,
  c: CoordinationTables,
  t: WebhookTables,
  me: ReplicaIdentity,
  accountId: string,
  epoch: number,
  deliveryIds: readonly string[],
): Promise<number> {
  if (deliveryIds.length === 0) return 0
  const r = await db.query(
    `UPDATE ${t.inbox} i SET taken_at = clock_timestamp(), taken_epoch = $4
     FROM ${c.leases} l
     WHERE i.account_id = $1 AND i.delivery_id = ANY($5::text[]) AND (i.taken_epoch IS NULL OR i.taken_epoch < $4)
       AND l.account_id = $1 AND l.owner = $2 AND l.incarnation = $3::uuid AND l.epoch = $4 AND l.expires_at > clock_timestamp()`,
    [accountId, me.name, me.incarnation, epoch, deliveryIds],
  )
  return r.rowCount ?? 0
}

/** Accounts with deliveries not taken yet: the periodic sweep's list. */
export async function accountsWithPending(db: Queryable, t: WebhookTables): Promise<string[]> {
  const r = await db.query<{ account_id: string }>(`SELECT DISTINCT account_id FROM ${t.inbox} WHERE taken_at IS NULL ORDER BY 1`)
  return r.rows.map((x) => x.account_id)
}

/** Removes taken deliveries older than `olderThanMs` (the replay window must be shorter); returns how many. */
export async function pruneTaken(db: Queryable, t: WebhookTables, olderThanMs: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM ${t.inbox} WHERE taken_at IS NOT NULL AND taken_at < clock_timestamp() - $1 * interval '1 millisecond'`,
    [olderThanMs],
  )
  return r.rowCount ?? 0
}
