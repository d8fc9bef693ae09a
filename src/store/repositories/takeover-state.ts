// What a new owner of an account needs besides its rows to go on where the last owner stopped
// (docs/sharding.md, Takeover from the warehouse): the streams' cursors and the delivery-gap state,
// read in the destination's snapshot and replicated with its rows; and the restore of a mirror from
// such a copy, in one transaction. Both sides of the model live here: the SQL on the mirror.
import type { SqlCell } from '../../model/rows.js'
import type { TableSpec } from '../../model/table-spec.js'
import { quoteIdentifier } from '../../model/sql-names.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { viewStatements, type FieldDescriptor } from './custom-object-views.js'
import { parseInstant } from '../../model/timestamps.js'

/** The replicated state (JSON in the replica's state row): what `restoreMirror` puts back. */
export interface TakeoverState {
  /** Each stream's sync_state: its cursor (JSON text) and last success. */
  streams: [stream: string, cursor: string | null, lastSuccessAt: string | null][]
  /** webhook_state's delivery-gap cursor, when there is one. */
  webhook: [key: string, value: string][]
  /** The newest upstream updated_at the mirror's change_log holds: how far this copy has seen. */
  highWater: string | null
  /** The continuous sweeps' plan as last written (SweepPlan's JSON), null when none: a new owner goes on with it. */
  plan: string | null
}

/** webhook_state's key for the sweeps' plan: the mirror's small key-value table, replicated with the takeover state. */
const PLAN_KEY = 'sweep-plan'

/** How often the plan alone (no cursor moved) counts as progress: the warehouse's plan is at most this much older. */
export const PLAN_PROGRESS_MS = 30_000

/**
 * The continuous sweeps' schedule where the last one left it (sweep-loop.ts), written after each
 * sweep: every stream's last sweep start, rest and back-off, and the last discovery. Times as canonical ISO text.
 */
export interface SweepPlan {
  /** When it was written: the copy it travels in reflects every sweep it names. */
  writtenAt: string
  discoveredAt: string | null
  streams: [stream: string, startedAt: string, restMs: number, failures: number, retryAt: string | null][]
  /** Set by the copy, not the sweeps: the receipt of the oldest delivery its mirror had not applied yet. */
  pendingSince?: string | null
}

/** Stores the sweeps' plan in the mirror (one upsert after each sweep). */
export function writeSweepPlan(sqlite: Sqlite, plan: SweepPlan): void {
  sqlite
    .prepare(
      `INSERT INTO webhook_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    )
    .run(PLAN_KEY, JSON.stringify(plan), plan.writtenAt)
}

/** The plan the mirror holds (after a restore: the old owner's), undefined when none or not this shape. */
export function readSweepPlan(sqlite: Sqlite): SweepPlan | undefined {
  const text = sqlite.prepare(`SELECT value FROM webhook_state WHERE key = ?`).pluck().get(PLAN_KEY) as string | undefined
  return parseSweepPlan(text ?? null)
}

function parseSweepPlan(text: string | null): SweepPlan | undefined {
  if (text === null) return undefined
  try {
    const o = JSON.parse(text) as Partial<SweepPlan>
    if (typeof o.writtenAt !== 'string' || Number.isNaN(parseInstant(o.writtenAt)) || !Array.isArray(o.streams)) return undefined
    return {
      writtenAt: o.writtenAt,
      discoveredAt: typeof o.discoveredAt === 'string' ? o.discoveredAt : null,
      streams: o.streams,
      ...(typeof o.pendingSince === 'string' ? { pendingSince: o.pendingSince } : {}),
    }
  } catch {
    return undefined
  }
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
  const text = sqlite.prepare(`SELECT value FROM webhook_state WHERE key = ?`).pluck().get(PLAN_KEY) as string | undefined
  const plan = parseSweepPlan(text ?? null)
  // A delivery waiting in the inbox is not in this copy: a new owner's replay must reach back to it.
  const pendingSince = sqlite.prepare(`SELECT min(received_at) FROM webhook_inbox WHERE processed_at IS NULL`).pluck().get() as
    string | null
  const state: TakeoverState = {
    streams,
    webhook,
    highWater: highWater(sqlite),
    plan: plan === undefined ? null : JSON.stringify({ ...plan, pendingSince }),
  }
  return JSON.stringify(state)
}

/** The newest upstream updated_at in change_log (canonical text compares as time), null when none. */
export function highWater(sqlite: Sqlite): string | null {
  return sqlite.prepare(`SELECT max(updated_at) FROM change_log`).pluck().get() as string | null
}

/**
 * What of the state marks progress (cursors, the delivery-gap state, the high-water mark, and the
 * plan's time in steps of PLAN_PROGRESS_MS), without the last successes: a replica writes the state
 * again when this moved, not after every idle sweep, and an idle account's plan about twice a minute.
 */
export function takeoverProgress(text: string): string {
  const state = parseTakeoverState(text)
  if (state === undefined) return text
  const planAt = parseSweepPlan(state.plan)?.writtenAt
  const planStep = planAt === undefined ? null : Math.floor(parseInstant(planAt) / PLAN_PROGRESS_MS)
  return JSON.stringify([state.streams.map(([stream, cursor]) => [stream, cursor]), state.webhook, state.highWater, planStep])
}

/** The state's JSON, or undefined when it is not this shape (an older release wrote none). */
export function parseTakeoverState(text: string | null): TakeoverState | undefined {
  if (text === null) return undefined
  try {
    const o = JSON.parse(text) as Partial<TakeoverState>
    if (!Array.isArray(o.streams) || !Array.isArray(o.webhook)) return undefined
    return {
      streams: o.streams,
      webhook: o.webhook,
      highWater: typeof o.highWater === 'string' ? o.highWater : null,
      plan: typeof o.plan === 'string' ? o.plan : null,
    }
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
    // The copy's plan, or none: a plan of this mirror's own would name sweeps the copy does not reflect.
    if (copy.state.plan === null) sqlite.prepare(`DELETE FROM webhook_state WHERE key = ?`).run(PLAN_KEY)
    else hook.run(PLAN_KEY, copy.state.plan, copy.now)
  })()
  return rows
}
