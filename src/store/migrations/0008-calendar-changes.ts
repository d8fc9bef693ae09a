// calendar-a's change feed (spec: Integrations, `GET /api/v1/integrations/calendar-a/sync`):
// one row per change record read. The record's key names are "not shown" in the spec, so the typed
// columns are filled from the names seen and `raw` keeps each record as received. `change_key`
// (the external event id and the change's time, or a hash of `raw` when either is missing) makes a
// re-read of an overlapping window insert nothing twice.
import type { MigrationStatements } from './types.js'

export const calendarChanges: MigrationStatements = [
  `CREATE TABLE calendar_changes (
    integration TEXT NOT NULL,
    change_key TEXT NOT NULL,
    action TEXT,
    visit_id TEXT,
    external_event_id TEXT,
    changed_at TEXT,
    raw TEXT NOT NULL,
    fetched_at TEXT NOT NULL,
    PRIMARY KEY (integration, change_key)
  ) STRICT`,
  `CREATE INDEX calendar_changes_visit ON calendar_changes (visit_id)`,
]
