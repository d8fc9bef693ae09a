// Replicas register, heartbeat and leave through one row each. Liveness is judged by the server's
// clock alone (`heartbeat_at` within the lease time of the server's `now()`), so replicas never
// compare their own clocks with each other (docs/sharding.md, Clocks).
import type { CoordinationTables, Queryable } from './coordination-schema.js'

export interface ReplicaIdentity {
  /** Stable across restarts (the host name by default: a StatefulSet pod keeps its name). */
  name: string
  /** This process's own id (a UUID): a restart under the same name is a new incarnation. */
  incarnation: string
}

export interface ReplicaRow {
  name: string
  incarnation: string
  stopping: boolean
  /** Milliseconds since its last heartbeat, by the server's clock. */
  silentMs: number
}

/** Registers `me`, replacing a previous incarnation of the same name (its leases are then not mine). */
export async function registerReplica(db: Queryable, t: CoordinationTables, me: ReplicaIdentity): Promise<void> {
  await db.query(
    `INSERT INTO ${t.replicas} (name, incarnation) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET incarnation = excluded.incarnation, started_at = now(), heartbeat_at = now(), stopping = false`,
    [me.name, me.incarnation],
  )
}

/**
 * Records that `me` is alive. False when the row is gone or belongs to another incarnation: another
 * process runs under this name, and this one must stop acting (the caller registers again or exits).
 */
export async function heartbeat(db: Queryable, t: CoordinationTables, me: ReplicaIdentity): Promise<boolean> {
  const r = await db.query(`UPDATE ${t.replicas} SET heartbeat_at = now() WHERE name = $1 AND incarnation = $2`, [me.name, me.incarnation])
  return r.rowCount === 1
}

/** Marks `me` as stopping: the others leave it out of the assignment at once, before its leases lapse. */
export async function markStopping(db: Queryable, t: CoordinationTables, me: ReplicaIdentity): Promise<void> {
  await db.query(`UPDATE ${t.replicas} SET stopping = true WHERE name = $1 AND incarnation = $2`, [me.name, me.incarnation])
}

/** Removes `me` (a graceful stop, after its leases are released). */
export async function deregister(db: Queryable, t: CoordinationTables, me: ReplicaIdentity): Promise<void> {
  await db.query(`DELETE FROM ${t.replicas} WHERE name = $1 AND incarnation = $2`, [me.name, me.incarnation])
}

/** Every registered replica, live or not, by name. */
export async function listReplicas(db: Queryable, t: CoordinationTables): Promise<ReplicaRow[]> {
  const r = await db.query<{ name: string; incarnation: string; stopping: boolean; silent_ms: string }>(
    `SELECT name, incarnation::text, stopping, floor(extract(epoch FROM clock_timestamp() - heartbeat_at) * 1000)::bigint AS silent_ms
     FROM ${t.replicas} ORDER BY name`,
  )
  return r.rows.map((x) => ({ name: x.name, incarnation: x.incarnation, stopping: x.stopping, silentMs: Number(x.silent_ms) }))
}

/** The names of the replicas that heartbeat within `leaseMs` of the server's clock and are not stopping. */
export async function liveReplicas(db: Queryable, t: CoordinationTables, leaseMs: number): Promise<string[]> {
  const r = await db.query<{ name: string }>(
    `SELECT name FROM ${t.replicas}
     WHERE NOT stopping AND heartbeat_at > clock_timestamp() - $1 * interval '1 millisecond' ORDER BY name`,
    [leaseMs],
  )
  return r.rows.map((x) => x.name)
}
