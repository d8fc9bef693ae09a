// The owner's request starts per account, kept in Postgres so a new owner counts the old owner's
// last minute against its own first (docs/sharding.md, Budgets across a handover). Times cross
// replicas as ages, never as wall-clock instants: the writer sends "n ms ago" by its own clock, the
// server stamps them on its clock, and the reader gets ages back from the server's clock.
import type { CoordinationTables, Queryable } from './coordination-schema.js'
import type { ReplicaIdentity } from './membership.js'

export interface StartsRecord {
  accountId: string
  /** The lease epoch the starts were made under. */
  epoch: number
  /** Each start's age in milliseconds when the statement was built (the last window's starts). */
  agesMs: readonly number[]
}

export interface PriorStarts {
  epoch: number
  /** Ages of the recorded starts within `windowMs`, oldest first, by the server's clock. */
  agesMs: number[]
  /** Milliseconds since the record was written: starts in this tail went unrecorded. */
  sinceRecordMs: number
  /** Written by a graceful release after the runtime stopped: the tail holds no start. */
  final: boolean
}

/**
 * Replaces the starts of each account in `records`, in one statement for all of them; only for
 * leases `me` still holds at the record's epoch, so a replica that lost one cannot overwrite the
 * new owner's. `final` marks the last record before a release. Returns the accounts written.
 */
export async function recordStarts(
  db: Queryable,
  t: CoordinationTables,
  me: ReplicaIdentity,
  records: readonly StartsRecord[],
  final = false,
): Promise<string[]> {
  if (records.length === 0) return []
  const doc = JSON.stringify(records.map((r) => ({ a: r.accountId, e: r.epoch, ages: r.agesMs.map((x) => Math.max(0, Math.round(x))) })))
  const r = await db.query<{ account_id: string }>(
    `INSERT INTO ${t.starts} AS s (account_id, epoch, recorded_at, final, starts)
     SELECT x.a, x.e, now(), $4,
       ARRAY(SELECT now() - age::bigint * interval '1 millisecond' FROM jsonb_array_elements_text(x.ages) AS age ORDER BY 1)
     FROM jsonb_to_recordset($1::jsonb) AS x(a text, e bigint, ages jsonb)
     JOIN ${t.leases} l ON l.account_id = x.a AND l.epoch = x.e AND l.owner = $2 AND l.incarnation = $3::uuid
     ON CONFLICT (account_id) DO UPDATE SET epoch = excluded.epoch, recorded_at = excluded.recorded_at,
       final = excluded.final, starts = excluded.starts
     WHERE s.epoch <= excluded.epoch
     RETURNING account_id`,
    [doc, me.name, me.incarnation, final],
  )
  return r.rows.map((x) => x.account_id).sort()
}

/**
 * What the previous owners of `accountIds` recorded, with ages by the server's clock (one instant
 * for the whole answer), in one statement; accounts never recorded are absent. Run it on its own,
 * not inside a long transaction (its `now()` is the transaction's).
 */
export async function readPriorStarts(
  db: Queryable,
  t: CoordinationTables,
  accountIds: readonly string[],
  windowMs: number,
): Promise<Map<string, PriorStarts>> {
  const r = await db.query<{ account_id: string; epoch: string; since_ms: string; final: boolean; ages: string[] }>(
    `SELECT account_id, epoch, final, ceil(extract(epoch FROM now() - recorded_at) * 1000)::bigint AS since_ms,
       ARRAY(SELECT floor(extract(epoch FROM now() - s) * 1000)::bigint FROM unnest(starts) AS s
             WHERE s > now() - $2 * interval '1 millisecond' ORDER BY s) AS ages
     FROM ${t.starts} WHERE account_id = ANY($1::text[])`,
    [accountIds, windowMs],
  )
  return new Map(
    r.rows.map((row) => [
      row.account_id,
      { epoch: Number(row.epoch), agesMs: row.ages.map(Number), sinceRecordMs: Math.max(0, Number(row.since_ms)), final: row.final },
    ]),
  )
}
