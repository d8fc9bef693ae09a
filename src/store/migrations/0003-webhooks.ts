// Webhook intake: the inbox of accepted deliveries, the secret store of registered
// endpoints, and a small key/value table for the delivery-gap cursor.
import type { MigrationStatements } from './types.js'

export const webhooks: MigrationStatements = [
  // delivery_id is the key: the upstream's X-Service-Delivery, the replay and
  // duplicate defence (docs/webhooks.md), kept until retention removes the row
  // (`retention.deliveryIdsDays` after receipt, retention.ts). seq is the receipt order the processor
  // follows (an explicit column: VACUUM may renumber an implicit rowid).
  // The body is kept as signed: `raw` holds it when the bytes are valid UTF-8 (every real delivery);
  // otherwise `raw` is NULL and `raw_bytes` holds the exact bytes, so the signature can be re-checked.
  `CREATE TABLE webhook_inbox (
    delivery_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    event TEXT NOT NULL,
    received_at TEXT NOT NULL,
    raw TEXT,
    raw_bytes BLOB,
    verified_with TEXT NOT NULL,
    processed_at TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    CHECK ((raw IS NULL) <> (raw_bytes IS NULL))
  ) STRICT`,
  `CREATE INDEX webhook_inbox_pending ON webhook_inbox (seq) WHERE processed_at IS NULL AND error IS NULL`,
  // Held webhook secrets until 0011 moved them to their own file beside the mirror (secrets-file.ts).
  // One row per secret issued; superseded_at starts the grace period of a rotated secret.
  `CREATE TABLE webhook_secrets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id TEXT NOT NULL,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL,
    superseded_at TEXT
  ) STRICT`,
  `CREATE TABLE webhook_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`,
]
