// Readers of change_log that retention waits for (src/store/repositories/change-log-consumers.ts): the Postgres
// destination registers itself, and a user registers a named consumer with `fsm-sync consumers add`.
// `seq` is the last change the consumer has read; rows above the lowest seq are kept.
import type { MigrationStatements } from './types.js'

export const changeLogConsumers: MigrationStatements = [
  `CREATE TABLE change_log_consumers (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('destination', 'user')),
    seq INTEGER NOT NULL,
    registered_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_error TEXT,
    last_error_at TEXT
  ) STRICT`,
]
