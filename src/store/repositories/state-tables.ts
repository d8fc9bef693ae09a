// The daemon's own tables (role `state`): bookkeeping of sweeps, runs, webhook intake, the request
// ledger and the migrations, declared in the shape of src/model/table-spec.ts so that the contract
// test (test/integration/store/declared-tables.test.ts) checks every table of the mirror against a
// declaration, and readers that list the mirror's tables (the schema catalog) need no other list.
// The account's data is declared by the connectors (connectors/index.ts, DATA_TABLES).
import type { ColumnKind, ColumnSpec, TableSpec } from '../../model/table-spec.js'
import { MIGRATION_TABLE } from '../sqlite/migration-runner.js'

const c = (name: string, kind: ColumnKind, nullable: boolean, description: string, declaredType?: string): ColumnSpec => ({
  name,
  kind,
  nullable,
  description,
  ...(declaredType === undefined ? {} : { declaredType }),
})

const state = (name: string, description: string, primaryKey: readonly string[], columns: readonly ColumnSpec[]): TableSpec => ({
  name,
  description,
  role: 'state',
  primaryKey,
  columns,
})

export const STATE_TABLES: readonly TableSpec[] = [
  state(
    'change_log',
    'One row per change written to a data table, in write order (docs/guarantees.md).',
    ['seq'],
    [
      c('seq', 'integer', false, 'The change order.'),
      c('table_name', 'text', false, 'The data table changed.'),
      c('record_id', 'text', false, 'The record changed (custom records: `<slug>/<id>`).'),
      c('op', 'text', false, 'upsert or delete.'),
      c('updated_at', 'time', true, "The record's updated_at after the change."),
      c('changed_at', 'time', false, 'When fsm-sync wrote the change.'),
    ],
  ),
  state(
    'sync_state',
    "Each stream's cursor and its last success or error.",
    ['stream'],
    [
      c('stream', 'text', false, 'The stream (as `--stream` names it).'),
      c('cursor', 'json', true, 'Where the next sweep resumes, as JSON.'),
      c('last_success_at', 'time', true, 'When a run of the stream last succeeded.'),
      c('last_error', 'text', true, 'The last error of a run of the stream.'),
      c('last_error_at', 'time', true, 'When that error happened.'),
      c('last_run_id', 'integer', true, 'The last run of the stream (sync_runs.id).'),
      c('updated_at', 'time', false, 'When the row was last written.'),
    ],
  ),
  state(
    'sync_runs',
    'One row per run of a stream: sweep, reconcile, reference, trigger.',
    ['id'],
    [
      c('id', 'integer', false, 'The run id.'),
      c('kind', 'text', false, 'sweep, reconcile, reference or trigger.'),
      c('stream', 'text', false, 'The stream run.'),
      c('started_at', 'time', false, 'When the run started.'),
      c('ended_at', 'time', true, 'When it ended; NULL while running.'),
      c('outcome', 'text', false, 'running, success, error, guarded, interrupted, ...'),
      c('rows', 'integer', false, 'Rows changed.'),
      c('requests', 'integer', false, 'Upstream requests made.'),
      c('error', 'text', true, 'Why the run failed.'),
      c('details', 'json', true, 'What else the run reports, as JSON.'),
      c('owner_id', 'integer', true, 'The process that owns the run (run_owners.id).'),
    ],
  ),
  state(
    'webhook_inbox',
    'Every accepted webhook delivery, in receipt order, until retention removes it.',
    ['delivery_id'],
    [
      c('delivery_id', 'text', false, "The sender's delivery id: the replay and duplicate defence."),
      c('seq', 'integer', false, 'Receipt order, the order the processor applies.'),
      c('event', 'text', false, 'The event name.'),
      c('received_at', 'time', false, 'When the delivery was accepted.'),
      c('raw', 'text', true, 'The body as signed, when it is valid UTF-8.'),
      c('raw_bytes', 'bytes', true, 'The body as signed, when it is not valid UTF-8.'),
      c('verified_with', 'text', false, 'Which secret verified the signature (never the secret).'),
      c('processed_at', 'time', true, 'When the delivery was applied or skipped.'),
      c('error', 'text', true, 'Why it could not be applied.'),
      c('attempts', 'integer', false, 'Attempts to apply it.'),
      c('skipped', 'text', true, 'Why it was acknowledged and kept but not applied.'),
      c('body_dropped_at', 'time', true, 'When retention dropped the body and kept the compact row.'),
    ],
  ),
  state(
    'webhook_state',
    'Small key/value state of webhook intake (the delivery-gap cursor, pending scrubs).',
    ['key'],
    [
      c('key', 'text', false, 'The key.'),
      c('value', 'text', false, 'The value.'),
      c('updated_at', 'time', false, 'When it was last written.'),
    ],
  ),
  state(
    'request_starts',
    'Start times of recent upstream requests, for the sliding rate window across processes.',
    [],
    [c('at_ms', 'integer', false, 'The start, in milliseconds since the epoch.')],
  ),
  state(
    'run_owners',
    'Each process that ran streams on the mirror, with its heartbeat.',
    ['id'],
    [
      c('id', 'integer', false, 'The owner id.'),
      c('pid', 'integer', false, 'Process id.'),
      c('host', 'text', false, 'Host name.'),
      c('pid_namespace', 'text', false, 'PID namespace.'),
      c('started_at', 'time', false, 'When the process started.'),
      c('heartbeat_at', 'time', false, 'Its last heartbeat.'),
    ],
  ),
  state(
    'mirror_probe',
    'The one row the readiness probe rewrites and syncs.',
    ['id'],
    [c('id', 'integer', false, 'Always 1.'), c('written_at', 'time', false, 'When the probe last wrote.')],
  ),
  state(
    'change_log_consumers',
    'Readers of change_log that retention waits for: a destination, or a consumer a user registered (src/store/repositories/change-log-consumers.ts).',
    ['name'],
    [
      c('name', 'text', false, 'The consumer (`postgres:<host>:<port>:<database>:<schema>` for a Postgres destination).'),
      c('kind', 'text', false, 'destination or user.'),
      c('seq', 'integer', false, 'The last change_log seq it has read.'),
      c('registered_at', 'time', false, 'When it was registered.'),
      c('updated_at', 'time', false, 'When it last moved or failed.'),
      c('last_error', 'text', true, 'Its last error, until it next succeeds.'),
      c('last_error_at', 'time', true, 'When that error happened.'),
      c(
        'target',
        'text',
        true,
        'A destination: the server and database it writes to (`<host>:<port>/<database>`, never the user or password).',
      ),
      c('schema_name', 'text', true, 'A destination: the Postgres schema of its replica.'),
      c(
        'loaded_at',
        'time',
        true,
        'A destination: when it was last loaded from a snapshot; NULL until its first load, and until then it holds no rows back.',
      ),
      c('applied_at', 'time', true, 'A destination: when it last committed changes.'),
    ],
  ),
  state(
    'mirror_identity',
    "The mirror's identity, created once: a destination records it and refuses to be fed by another mirror.",
    ['id'],
    [
      c('id', 'integer', false, 'Always 1.'),
      c('mirror_id', 'text', false, 'A random id, the same for the life of the mirror file.'),
      c('created_at', 'time', false, 'When it was created.'),
    ],
  ),
  state(
    MIGRATION_TABLE,
    'The migrations applied to the mirror (the table kysely created; src/store/sqlite/migration-runner.ts).',
    ['name'],
    [
      c('name', 'text', false, 'The migration name.', 'varchar(255)'),
      c('timestamp', 'time', false, 'When it was applied.', 'varchar(255)'),
    ],
  ),
]
