// The shared webhook tables beside the coordination tables (docs/sharding.md, Webhooks): each
// account's signing secrets, published by its owner, and the deliveries a replica took for an account
// it does not own. Only the daemon's role may read them: the statements here run as that role, which
// then owns them, and every privilege another role holds on them is revoked at each start.
import type pg from 'pg'
import { quoteIdentifier } from '../model/sql-names.js'
import { DEFAULT_COORDINATION_SCHEMA, underSchemaLock, type Queryable } from './coordination-schema.js'

export interface WebhookTables {
  schema: string
  secrets: string
  inbox: string
  /** The NOTIFY channel of new deliveries (payload: the account id); not quoted. */
  inboxChannel: string
  /** The NOTIFY channel of published secrets (payload: the account id); not quoted. */
  secretsChannel: string
  /** The NOTIFY channel of released leases (payload: the releasing replica's name); not quoted. */
  leasesChannel: string
}

export function webhookTables(schema = DEFAULT_COORDINATION_SCHEMA): WebhookTables {
  const s = quoteIdentifier(schema)
  // The default schema's channels are the documented ones; another schema (tests) gets its own.
  const suffix = schema === DEFAULT_COORDINATION_SCHEMA ? '' : `:${schema}`
  return {
    schema: s,
    secrets: `${s}.webhook_secrets`,
    inbox: `${s}.webhook_inbox`,
    inboxChannel: `fsm_inbox${suffix}`,
    secretsChannel: `fsm_secrets${suffix}`,
    leasesChannel: `fsm_leases${suffix}`,
  }
}

export function webhookDdl(t: WebhookTables): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${t.schema}`,
    // secrets: the JSON list of the account's secrets, or its AES-256-GCM sealing (shared-secrets.ts);
    // version: what a publisher read, so that two publishing at once merge instead of one losing.
    `CREATE TABLE IF NOT EXISTS ${t.secrets} (
      account_id text PRIMARY KEY,
      secrets bytea NOT NULL,
      encrypted boolean NOT NULL,
      version bigint NOT NULL DEFAULT 1,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    // taken_at: moved into the owner's local inbox, by the owner of lease epoch taken_epoch.
    `CREATE TABLE IF NOT EXISTS ${t.inbox} (
      account_id text NOT NULL,
      delivery_id text NOT NULL,
      event text NOT NULL,
      body bytea NOT NULL,
      verified_with text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      taken_at timestamptz,
      taken_epoch bigint,
      PRIMARY KEY (account_id, delivery_id)
    )`,
    `CREATE INDEX IF NOT EXISTS webhook_inbox_pending ON ${t.inbox} (account_id, received_at) WHERE taken_at IS NULL`,
    `CREATE INDEX IF NOT EXISTS webhook_inbox_received ON ${t.inbox} (received_at)`,
  ]
}

/**
 * Creates the tables when missing (under the coordination DDL's lock), then revokes every privilege
 * a role other than the tables' owner holds on them (PUBLIC included): a `GRANT`, or default
 * privileges that granted it at creation. Returns the roles revoked ("PUBLIC" for PUBLIC), for a log line.
 */
export async function ensureWebhookSchema(
  client: pg.ClientBase,
  schema = DEFAULT_COORDINATION_SCHEMA,
): Promise<{ tables: WebhookTables; revoked: string[] }> {
  const t = webhookTables(schema)
  const revoked = new Set<string>()
  await underSchemaLock(client, schema, async () => {
    for (const statement of webhookDdl(t)) await client.query(statement)
    for (const table of [t.secrets, t.inbox]) for (const role of await revokeOthers(client, table)) revoked.add(role)
  })
  return { tables: t, revoked: [...revoked].sort() }
}

/** Roles other than the owner holding a privilege on `table` ("PUBLIC" for grantee 0). */
export async function grantees(db: Queryable, table: string): Promise<string[]> {
  const r = await db.query<{ grantee: string }>(
    `SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname END AS grantee
     FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE c.oid = $1::regclass AND a.grantee <> c.relowner ORDER BY 1`,
    [table],
  )
  return r.rows.map((x) => x.grantee)
}

async function revokeOthers(db: Queryable, table: string): Promise<string[]> {
  const roles = await grantees(db, table)
  for (const role of roles) await db.query(`REVOKE ALL ON TABLE ${table} FROM ${role === 'PUBLIC' ? 'PUBLIC' : quoteIdentifier(role)}`)
  return roles
}
