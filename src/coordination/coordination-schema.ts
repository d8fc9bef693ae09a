// The coordination tables in the destination's Postgres server (docs/sharding.md): who is live, who
// holds which account under which fencing epoch, and the request starts a new owner counts against
// its first minute. Created idempotently by every replica at start, one at a time.
import type pg from 'pg'
import { quoteIdentifier } from '../model/sql-names.js'

export const DEFAULT_COORDINATION_SCHEMA = 'fsm_coordination'

/** The subset of pg's Client, PoolClient and Pool that single statements need. */
export type Queryable = Pick<pg.ClientBase, 'query'>

/** The schema's three tables, each name quoted: `"fsm_coordination"."replicas"` and so on. */
export interface CoordinationTables {
  schema: string
  replicas: string
  leases: string
  starts: string
}

export function coordinationTables(schema = DEFAULT_COORDINATION_SCHEMA): CoordinationTables {
  const s = quoteIdentifier(schema)
  return { schema: s, replicas: `${s}.replicas`, leases: `${s}.account_leases`, starts: `${s}.request_starts` }
}

export function coordinationDdl(t: CoordinationTables): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${t.schema}`,
    `CREATE TABLE IF NOT EXISTS ${t.replicas} (
      name text PRIMARY KEY,
      incarnation uuid NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      heartbeat_at timestamptz NOT NULL DEFAULT now(),
      stopping boolean NOT NULL DEFAULT false
    )`,
    // owner and incarnation are NULL once released; the epoch stays, so the next owner's is higher.
    // Every heartbeat rewrites each row: room on the page keeps those updates HOT (no index entry).
    `CREATE TABLE IF NOT EXISTS ${t.leases} (
      account_id text PRIMARY KEY,
      owner text,
      incarnation uuid,
      epoch bigint NOT NULL,
      acquired_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    ) WITH (fillfactor = 50)`,
    `CREATE INDEX IF NOT EXISTS account_leases_owner ON ${t.leases} (owner, incarnation)`,
    // The owner's request starts in the last window, by the server's clock, replaced each heartbeat.
    `CREATE TABLE IF NOT EXISTS ${t.starts} (
      account_id text PRIMARY KEY,
      epoch bigint NOT NULL,
      recorded_at timestamptz NOT NULL,
      final boolean NOT NULL DEFAULT false,
      starts timestamptz[] NOT NULL
    )`,
  ]
}

/**
 * Creates the schema and its tables when missing. Replicas starting together take a transaction
 * advisory lock first: concurrent `CREATE ... IF NOT EXISTS` of one name can still fail on the
 * catalog's unique index, so they run one after the other.
 */
export async function ensureCoordinationSchema(client: pg.ClientBase, schema = DEFAULT_COORDINATION_SCHEMA): Promise<CoordinationTables> {
  const t = coordinationTables(schema)
  await underSchemaLock(client, schema, async () => {
    for (const statement of coordinationDdl(t)) await client.query(statement)
  })
  return t
}

/**
 * Runs `work` in one transaction holding the schema's DDL lock (a transaction advisory lock), so
 * replicas creating the coordination schema's tables together do so one after the other.
 */
export async function underSchemaLock(client: pg.ClientBase, schema: string, work: () => Promise<void>): Promise<void> {
  await client.query('BEGIN')
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('fsm-sync coordination'), hashtext($1))`, [schema])
    await work()
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  }
}
