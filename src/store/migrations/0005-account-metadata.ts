// Account metadata: webhook endpoints, their delivery records, and API keys. Never a
// secret or a plaintext key: the connectors strip them before anything is stored.
import type { MigrationStatements } from './types.js'

const TAIL = `
  created_at TEXT,
  updated_at TEXT NOT NULL,
  deleted_at TEXT,
  raw TEXT NOT NULL,
  synced_at TEXT NOT NULL`

export const accountMetadata: MigrationStatements = [
  `CREATE TABLE webhook_endpoints (id TEXT PRIMARY KEY, url TEXT, events TEXT, description TEXT, is_active INTEGER, metadata TEXT,${TAIL}) STRICT`,
  `CREATE TABLE webhook_deliveries (id TEXT PRIMARY KEY, endpoint_id TEXT, event TEXT, status TEXT, attempts INTEGER, response_code INTEGER,
    error_message TEXT, duration REAL, last_attempt_at TEXT,${TAIL}) STRICT`,
  `CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, created_at)`,
  `CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT, scopes TEXT, expires_at TEXT, last_used_at TEXT, is_active INTEGER,${TAIL}) STRICT`,
]
