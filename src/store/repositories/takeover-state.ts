// What a new owner of an account needs besides its rows to go on where the last owner stopped
// (docs/sharding.md, Takeover from the warehouse): the streams' cursors and the delivery-gap state,
// read in the destination's snapshot and replicated with its rows; and the restore of a mirror from
// such a copy, in one transaction. Both sides of the model live here: the SQL on the mirror.
import type { SqlCell } from '../../model/rows.js'
import type { TableSpec } from '../../model/table-spec.js'
import { quoteIdentifier } from '../../model/sql-names.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { viewStatements, type FieldDescriptor } from './custom-object-views.js'

/** The replicated state (JSON in the replica's state row): what `restoreMirror` puts back. */
export interface TakeoverState {
  /** Each stream's sync_state: its cursor (JSON text) and last success. */
  streams: [stream: string, cursor: string | null, lastSuccessAt: string | null][]
  /** webhook_state's delivery-gap cursor, when there is one. */
  webhook: [key: string, value: string][]
  /** The newest upstream updated_at the mirror's change_log holds: how far this copy has seen. */
  highWater: string | null
}

/** The mirror's takeover state, as JSON (read it in the snapshot its rows are read from). */
export function readTakeoverState(sqlite: Sqlite): string {
  const streams = sqlite
    .prepare(`SELECT stream, cursor, last_success_at FROM sync_state ORDER BY stream`)
    .raw(true)
    .all() as TakeoverState['streams']
  // The delivery-gap cursor (webhooks/delivery-gaps.ts) only: the other keys are this mirror's own upkeep.
  const webhook = sqlite
    .prepare(`SELECT key, value FROM webhook_state WHERE key = 'delivery-gaps'`)
    .raw(true)
    .all() as TakeoverState['webhook']
  const state: TakeoverState = { streams, webhook, highWater: highWater(sqlite) }
  return JSON.stringify(state)
}

/** The newest upstream updated_at in change_log (canonical text compares as time), null when none. */
export function highWater(sqlite: Sqlite): string | null {
  return sqlite.prepare(`SELECT max(updated_at) FROM change_log`).pluck().get() as string | null
}

/**
 * What of the state marks progress (cursors, the delivery-gap state, the high-water mark), without the
 * last successes: a replica writes the state again when this moved, not after every idle sweep.
 */
export function takeoverProgress(text: string): string {
  const state = parseTakeoverState(text)
  if (state === undefined) return text
  return JSON.stringify([state.streams.map(([stream, cursor]) => [stream, cursor]), state.webhook, state.highWater])
}

/** The state's JSON, or undefined when it is not this shape (an older release wrote none). */
export function parseTakeoverState(text: string | null): TakeoverState | undefined {
  if (text === null) return undefined
  try {
    const o = JSON.parse(text) as Partial<TakeoverState>
    if (!Array.isArray(o.streams) || !Array.isArray(o.webhook)) return undefined
    return { streams: o.streams, webhook: o.webhook, highWater: typeof o.highWater === 'string' ? o.highWater : null }
  } catch {
    return undefined
  }
}

/** Whether the mirror holds any synced data (a stream's cursor or success): an empty one has nothing to lose. */
export function mirrorHasData(sqlite: Sqlite): boolean {
  return sqlite.prepare(`SELECT 1 FROM sync_state WHERE cursor IS NOT NULL OR last_success_at IS NOT NULL LIMIT 1`).get() !== undefined
}

export interface RestoredCopy {
  /** Each table with its rows, the columns in declaration order (change_log included, with its seqs). */
  tables: { spec: TableSpec; rows: SqlCell[][] }[]
  state: TakeoverState
  /** The copy's last change: the mirror's change_log sequence goes on after it. */
  lastSeq: number
  /** The time written as the streams' updated_at (ISO). */
  now: string
}

/**
 * Replaces the mirror's data, change_log and sync state with the copy's, in one transaction: the
 * run history, the request ledger, the local webhook inbox and the mirror's identity stay.
 */
export function restoreMirror(sqlite: Sqlite, copy: RestoredCopy): number {
  let rows = 0
  sqlite.transaction(() => {
    // The custom objects' views follow their types: the old ones go, the copy's are built (custom-object-types.ts's rule).
    const views = () => sqlite.prepare(`SELECT view_name FROM custom_object_types WHERE view_name IS NOT NULL`).pluck().all() as string[]
    for (const view of views()) sqlite.exec(`DROP VIEW IF EXISTS ${quoteIdentifier(view)}`)
    for (const { spec, rows: values } of copy.tables) {
      sqlite.prepare(`DELETE FROM ${quoteIdentifier(spec.name)}`).run()
      const names = spec.columns.map((c) => quoteIdentifier(c.name))
      const insert = sqlite.prepare(
        `INSERT INTO ${quoteIdentifier(spec.name)} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`,
      )
      for (const row of values) insert.run(row)
      rows += values.length
    }
    // AUTOINCREMENT's memory: the next change is numbered after the copy's last, even with every row pruned.
    const seq = sqlite.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`).pluck().get() as number | undefined
    if (seq === undefined) sqlite.prepare(`INSERT INTO sqlite_sequence (name, seq) VALUES ('change_log', ?)`).run(copy.lastSeq)
    else sqlite.prepare(`UPDATE sqlite_sequence SET seq = ? WHERE name = 'change_log'`).run(copy.lastSeq)
    const types = sqlite
      .prepare(`SELECT slug, fields FROM custom_object_types WHERE view_name IS NOT NULL AND fields IS NOT NULL`)
      .all() as {
      slug: string
      fields: string
    }[]
    for (const t of types) for (const statement of viewStatements(t.slug, JSON.parse(t.fields) as FieldDescriptor[])) sqlite.exec(statement)
    sqlite.prepare(`DELETE FROM sync_state`).run()
    const stream = sqlite.prepare(`INSERT INTO sync_state (stream, cursor, last_success_at, updated_at) VALUES (?, ?, ?, ?)`)
    for (const [name, cursor, last] of copy.state.streams) stream.run(name, cursor, last, copy.now)
    const hook = sqlite.prepare(
      `INSERT INTO webhook_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    )
    for (const [key, value] of copy.state.webhook) hook.run(key, value, copy.now)
  })()
  return rows
}
