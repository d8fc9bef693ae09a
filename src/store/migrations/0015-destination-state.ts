// The mirror's identity, which a destination records so that a replica is never fed by two mirrors,
// and what `status` shows of a destination from the mirror alone: where it writes and when it last
// loaded and applied. A destination never loaded (loaded_at NULL) holds no change_log rows back;
// destinations registered before this migration had loaded (or failed) once, and keep holding.
import type { MigrationStatements } from './types.js'

export const destinationState: MigrationStatements = [
  `CREATE TABLE mirror_identity (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    mirror_id TEXT NOT NULL,
    created_at TEXT NOT NULL
  ) STRICT`,
  `INSERT INTO mirror_identity (id, mirror_id, created_at) VALUES (1, lower(hex(randomblob(16))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`,
  `ALTER TABLE change_log_consumers ADD COLUMN target TEXT`,
  `ALTER TABLE change_log_consumers ADD COLUMN schema_name TEXT`,
  `ALTER TABLE change_log_consumers ADD COLUMN loaded_at TEXT`,
  `ALTER TABLE change_log_consumers ADD COLUMN applied_at TEXT`,
  `UPDATE change_log_consumers SET loaded_at = registered_at WHERE kind = 'destination' AND seq > 0`,
]
