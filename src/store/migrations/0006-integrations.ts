// Integrations: the last status read of each calendar (spec: Integrations, `GET
// .../calendar-a/status` holds exactly connected, email, lastSyncAt, calendarId). Trigger results
// themselves are `trigger` runs in sync_runs.
import type { MigrationStatements } from './types.js'

export const integrations: MigrationStatements = [
  `CREATE TABLE integration_status (
    name TEXT PRIMARY KEY,
    connected INTEGER,
    email TEXT,
    last_sync_at TEXT,
    calendar_id TEXT,
    error TEXT,
    raw TEXT,
    checked_at TEXT NOT NULL
  ) STRICT`,
]
