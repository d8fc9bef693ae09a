// What a replica learns of the leases beyond its own: how long an account's previous lease has been
// over when it takes it and how many configured accounts have no owner (its metrics, docs/metrics.md),
// and a release announced to the others, who heartbeat at once (docs/sharding.md). One statement
// each, whatever the number of accounts; the server's clock alone.
import type { CoordinationTables, Queryable } from './coordination-schema.js'

export interface LeaseEnd {
  /** The epoch before the next acquire: a takeover from this row gives the lease `epoch + 1`. */
  epoch: number
  /** Milliseconds since the lease ended (released or expired), by the server's clock; negative while it runs. */
  endedMsAgo: number
}

/** Each existing lease row of `accountIds`: its epoch and how long ago it ended. */
export async function readLeaseEnds(db: Queryable, t: CoordinationTables, accountIds: readonly string[]): Promise<Map<string, LeaseEnd>> {
  if (accountIds.length === 0) return new Map()
  const r = await db.query<{ account_id: string; epoch: string; ended_ms_ago: string }>(
    `SELECT account_id, epoch, floor(extract(epoch FROM now() - expires_at) * 1000)::bigint AS ended_ms_ago
     FROM ${t.leases} WHERE account_id = ANY($1::text[])`,
    [accountIds],
  )
  return new Map(r.rows.map((x) => [x.account_id, { epoch: Number(x.epoch), endedMsAgo: Number(x.ended_ms_ago) }]))
}

/** How many of `accountIds` no replica holds an unexpired lease on: the accounts waiting for an owner. */
export async function countWaiting(db: Queryable, t: CoordinationTables, accountIds: readonly string[]): Promise<number> {
  if (accountIds.length === 0) return 0
  const r = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM unnest($1::text[]) AS a(id)
     WHERE NOT EXISTS (SELECT 1 FROM ${t.leases} l WHERE l.account_id = a.id AND l.owner IS NOT NULL AND l.expires_at > now())`,
    [accountIds],
  )
  return Number(r.rows[0]?.n ?? 0)
}

/** Tells the other replicas (their relay's LISTEN) that `me` released leases: they heartbeat now, not at their time. */
export async function announceRelease(db: Queryable, channel: string, me: string): Promise<void> {
  await db.query(`SELECT pg_notify($1, $2)`, [channel, me])
}
