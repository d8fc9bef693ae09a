// The mirror's own tables as kysely sees them: the typed schema of the queries in src/store that
// are not on a hot path (typed-query.ts builds and runs them). Only the tables those queries read or
// write are here, each with every column it has after the last migration, in the form SQLite returns
// it (TEXT -> string, INTEGER and REAL -> number, BLOB -> Buffer; NULL allowed -> `| null`).
// `Generated` marks a column SQLite fills itself (an AUTOINCREMENT id, a DEFAULT), so an insert may
// leave it out. The migrations stay the one place a column is created:
// test/unit/store/mirror-schema.test.ts compares this file with `PRAGMA table_info` of a freshly
// migrated mirror, so a column added, dropped or retyped by a migration fails it until this follows.
import type { Generated } from 'kysely'

/** What a run in sync_runs did. */
export type RunKind = 'sweep' | 'reconcile' | 'trigger' | 'reference'
/** How a run in sync_runs ended; `running` until it does. */
export type RunOutcome = 'running' | 'success' | 'error' | 'guarded' | 'interrupted'

export interface SyncStateTable {
  stream: string
  cursor: string | null
  last_success_at: string | null
  last_error: string | null
  last_error_at: string | null
  last_run_id: number | null
  updated_at: string
}

export interface SyncRunsTable {
  id: Generated<number>
  kind: RunKind
  stream: string
  started_at: string
  ended_at: string | null
  outcome: RunOutcome
  rows: Generated<number>
  requests: Generated<number>
  error: string | null
  details: string | null
  owner_id: number | null
}

export interface ChangeLogTable {
  seq: Generated<number>
  table_name: string
  record_id: string
  op: 'upsert' | 'delete'
  updated_at: string | null
  changed_at: string
}

export interface WebhookInboxTable {
  delivery_id: string
  seq: number
  event: string
  received_at: string
  raw: string | null
  raw_bytes: Buffer | null
  verified_with: string
  processed_at: string | null
  error: string | null
  attempts: Generated<number>
  skipped: string | null
  body_dropped_at: string | null
}

export interface WebhookStateTable {
  key: string
  value: string
  updated_at: string
}

export interface IntegrationStatusTable {
  name: string
  connected: number | null
  email: string | null
  last_sync_at: string | null
  calendar_id: string | null
  error: string | null
  raw: string | null
  checked_at: string
}

export interface CalendarChangesTable {
  integration: string
  change_key: string
  action: string | null
  visit_id: string | null
  external_event_id: string | null
  changed_at: string | null
  raw: string
  fetched_at: string
}

export interface ClientFieldsTable {
  id: string
  name: string | null
  label: string | null
  type: string | null
  options: string | null
  raw: string
  synced_at: string
}

export interface CustomRecordsTable {
  slug: string
  id: string
  stage: string | null
  data: string | null
  created_at: string | null
  updated_at: string
  deleted_at: string | null
  raw: string
  synced_at: string
}

export interface RunOwnersTable {
  id: Generated<number>
  pid: number
  host: string
  pid_namespace: string
  started_at: string
  heartbeat_at: string
}

export interface MirrorProbeTable {
  id: number
  written_at: string
}

/** The record of applied migrations (kysely's name and shape, kept for older mirrors; migration-runner.ts). */
export interface MigrationRecordTable {
  name: string
  timestamp: string
}

/** The kysely `Database` of the mirror: table name -> row. */
export interface MirrorSchema {
  sync_state: SyncStateTable
  sync_runs: SyncRunsTable
  change_log: ChangeLogTable
  webhook_inbox: WebhookInboxTable
  webhook_state: WebhookStateTable
  integration_status: IntegrationStatusTable
  calendar_changes: CalendarChangesTable
  client_fields: ClientFieldsTable
  custom_records: CustomRecordsTable
  run_owners: RunOwnersTable
  mirror_probe: MirrorProbeTable
  kysely_migration: MigrationRecordTable
}
