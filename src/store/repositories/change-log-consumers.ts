// Who reads change_log, and how far (docs/architecture.md, The Postgres destination). A consumer is a
// destination fsm-sync feeds itself (kind `destination`, its seq moved after each batch it committed)
// or a named reader a user registered (`fsm-sync consumers add NAME`; it moves its own seq with
// `fsm-sync consumers ack NAME SEQ`). Retention prunes change_log rows only once every consumer has
// read them and they are older than `retention.changeLogDays`; a consumer further behind than
// `retention.changeLogHoldDays` stops holding rows back, and a destination that finds its next
// change pruned loads itself again from a snapshot. A destination never loaded holds nothing back.
import { parseInstant } from '../../model/timestamps.js'
import type { Sqlite } from '../sqlite/mirror-database.js'

export type ConsumerKind = 'destination' | 'user'

export interface Consumer {
  name: string
  kind: ConsumerKind
  /** The last change_log seq the consumer has read. */
  seq: number
  registeredAt: string
  updatedAt: string
  lastError: string | null
  lastErrorAt: string | null
  /** A destination: the server and database it writes to (`host:port/database`), and its schema. */
  target: string | null
  schema: string | null
  /** A destination: when it was last loaded from a snapshot (null until its first load: it holds nothing back). */
  loadedAt: string | null
  /** A destination: when it last committed changes. */
  appliedAt: string | null
}

/** Where a destination writes: `host:port/database` (never the user or password) and the schema. */
export interface DestinationTarget {
  target: string
  schema: string
}

interface ConsumerRow {
  name: string
  kind: ConsumerKind
  seq: number
  registered_at: string
  updated_at: string
  last_error: string | null
  last_error_at: string | null
  target: string | null
  schema_name: string | null
  loaded_at: string | null
  applied_at: string | null
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/

/** Null when the name can be registered, else why not. */
export function consumerNameProblem(name: string): string | null {
  return NAME.test(name) ? null : 'must be 1 to 64 letters, digits, `_`, `.`, `:` or `-`, starting with a letter or digit'
}

function toConsumer(r: ConsumerRow): Consumer {
  return {
    name: r.name,
    kind: r.kind,
    seq: r.seq,
    registeredAt: r.registered_at,
    updatedAt: r.updated_at,
    lastError: r.last_error,
    lastErrorAt: r.last_error_at,
    // A mirror read-only from before these columns (status) has none of them.
    target: r.target ?? null,
    schema: r.schema_name ?? null,
    loadedAt: r.loaded_at ?? null,
    appliedAt: r.applied_at ?? null,
  }
}

/** The newest change_log seq there is (0 before the first change), pruned rows included. */
export function lastChangeSeq(sqlite: Sqlite): number {
  const kept = sqlite.prepare(`SELECT max(seq) FROM change_log`).pluck().get() as number | null
  if (kept !== null) return kept
  // Every row pruned: AUTOINCREMENT remembers the highest seq handed out.
  const seq = sqlite.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`).pluck().get() as number | undefined
  return seq ?? 0
}

/** When the first change after `seq` was logged (a consumer's lag), or undefined when none follows. */
export function nextChangeAt(sqlite: Sqlite, seq: number): string | undefined {
  return sqlite.prepare(`SELECT changed_at FROM change_log WHERE seq > ? ORDER BY seq LIMIT 1`).pluck().get(seq) as string | undefined
}

/** The oldest change still kept, or undefined when change_log is empty. */
export function firstKeptSeq(sqlite: Sqlite): number | undefined {
  return (sqlite.prepare(`SELECT min(seq) FROM change_log`).pluck().get() as number | null) ?? undefined
}

export class ChangeLogConsumers {
  constructor(private readonly sqlite: Sqlite) {}

  list(): Consumer[] {
    return (this.sqlite.prepare(`SELECT * FROM change_log_consumers ORDER BY name`).all() as ConsumerRow[]).map(toConsumer)
  }

  get(name: string): Consumer | undefined {
    const row = this.sqlite.prepare(`SELECT * FROM change_log_consumers WHERE name = ?`).get(name) as ConsumerRow | undefined
    return row === undefined ? undefined : toConsumer(row)
  }

  /**
   * Registers a consumer that has read everything up to `seq` (by default the newest change: it
   * starts from now). Registering an existing name changes nothing and returns the stored one.
   */
  add(name: string, kind: ConsumerKind, now: string, seq: number = lastChangeSeq(this.sqlite)): Consumer {
    const problem = consumerNameProblem(name)
    if (problem !== null) throw new Error(`consumer name ${JSON.stringify(name)} ${problem}`)
    this.sqlite
      .prepare(
        `INSERT INTO change_log_consumers (name, kind, seq, registered_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING`,
      )
      .run(name, kind, seq, now, now)
    return this.get(name)!
  }

  remove(name: string): boolean {
    return this.sqlite.prepare(`DELETE FROM change_log_consumers WHERE name = ?`).run(name).changes > 0
  }

  /** Records that the consumer has read up to `seq`, clearing its last error. Never moves it back. */
  ack(name: string, seq: number, now: string): boolean {
    return (
      this.sqlite
        .prepare(
          `UPDATE change_log_consumers SET seq = max(seq, ?), updated_at = ?, last_error = NULL, last_error_at = NULL,
             applied_at = CASE WHEN kind = 'destination' THEN ? ELSE applied_at END WHERE name = ?`,
        )
        .run(seq, now, now, name).changes > 0
    )
  }

  /**
   * Registers a destination (or updates its row) as loaded: it has read up to `seq` and holds rows
   * after it back from now on. `loadedAt` is when its replica was last loaded from a snapshot.
   */
  destinationLoaded(name: string, where: DestinationTarget, seq: number, loadedAt: string, now: string): void {
    this.sqlite
      .prepare(
        `INSERT INTO change_log_consumers (name, kind, seq, registered_at, updated_at, target, schema_name, loaded_at)
           VALUES (?, 'destination', ?, ?, ?, ?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at, last_error = NULL, last_error_at = NULL,
           target = excluded.target, schema_name = excluded.schema_name, loaded_at = excluded.loaded_at`,
      )
      .run(name, seq, now, now, where.target, where.schema, loadedAt)
  }

  /**
   * Records a destination's error. One not registered yet (never loaded) gets a row that holds
   * nothing back, so that `status` shows why it does not replicate.
   */
  destinationError(name: string, where: DestinationTarget, message: string, now: string): void {
    this.sqlite
      .prepare(
        `INSERT INTO change_log_consumers (name, kind, seq, registered_at, updated_at, target, schema_name) VALUES (?, 'destination', 0, ?, ?, ?, ?)
         ON CONFLICT(name) DO NOTHING`,
      )
      .run(name, now, now, where.target, where.schema)
    this.recordError(name, message, now)
  }

  /** Sets the consumer's position, also backwards (a destination loaded again from a snapshot), clearing its last error. */
  reset(name: string, seq: number, now: string): void {
    this.sqlite
      .prepare(`UPDATE change_log_consumers SET seq = ?, updated_at = ?, last_error = NULL, last_error_at = NULL WHERE name = ?`)
      .run(seq, now, name)
  }

  recordError(name: string, message: string, now: string): void {
    this.sqlite
      .prepare(`UPDATE change_log_consumers SET last_error = ?, last_error_at = ?, updated_at = ? WHERE name = ?`)
      .run(message, now, now, name)
  }
}

export interface ChangeLogPruneSettings {
  /** Rows newer than this many days are kept; "off" keeps every row. */
  changeLogDays: number | 'off'
  /** A consumer further behind than this many days no longer holds rows back; "off": it always does. */
  changeLogHoldDays: number | 'off'
}

const DAY_MS = 86_400_000

/**
 * The highest seq retention may delete now: older than `changeLogDays`, read by every consumer that
 * still holds rows back. Undefined when nothing may go.
 */
export function pruneHorizon(sqlite: Sqlite, now: number, settings: ChangeLogPruneSettings): number | undefined {
  if (settings.changeLogDays === 'off') return undefined
  const cutoff = new Date(now - settings.changeLogDays * DAY_MS).toISOString()
  // The first row too young to go: rows are appended in time order, so the scan stops at once.
  const young = sqlite.prepare(`SELECT seq FROM change_log WHERE changed_at >= ? ORDER BY seq LIMIT 1`).pluck().get(cutoff) as
    number | undefined
  let horizon = young === undefined ? lastChangeSeq(sqlite) : young - 1
  const holdCutoff = settings.changeLogHoldDays === 'off' ? undefined : new Date(now - settings.changeLogHoldDays * DAY_MS).toISOString()
  for (const c of new ChangeLogConsumers(sqlite).list()) {
    if (c.seq >= horizon) continue
    // A destination never loaded has nothing to keep reading from (a mistyped URL must not hold retention).
    if (c.kind === 'destination' && c.loadedAt === null) continue
    // How old the consumer's next unread change is: past the hold, it stops holding rows back.
    const next = nextChangeAt(sqlite, c.seq)
    if (holdCutoff !== undefined && next !== undefined && next < holdCutoff) continue
    horizon = c.seq
  }
  const first = firstKeptSeq(sqlite)
  return first === undefined || horizon < first ? undefined : horizon
}

export interface ConsumerLag {
  name: string
  /** The last change the consumer has read. */
  seq: number
  /** Changes it has not read yet. */
  lagChanges: number
  /** Age of the oldest change it has not read, in seconds (0 when it has read everything). */
  lagSeconds: number
  lastError: string | null
  lastErrorAt: string | null
  updatedAt: string
  target: string | null
  schema: string | null
  loadedAt: string | null
  appliedAt: string | null
}

/** How far behind the mirror a consumer is, from the mirror alone; undefined when it is not registered. */
export function consumerLag(sqlite: Sqlite, name: string, now: number): ConsumerLag | undefined {
  const c = new ChangeLogConsumers(sqlite).get(name)
  return c === undefined ? undefined : lagOf(sqlite, c, lastChangeSeq(sqlite), now)
}

/** Every destination registered on the mirror with its lag, the one that moved or failed last first. */
export function destinationLags(sqlite: Sqlite, now: number): ConsumerLag[] {
  const last = lastChangeSeq(sqlite)
  return new ChangeLogConsumers(sqlite)
    .list()
    .filter((c) => c.kind === 'destination')
    .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0))
    .map((c) => lagOf(sqlite, c, last, now))
}

function lagOf(sqlite: Sqlite, c: Consumer, last: number, now: number): ConsumerLag {
  const next = nextChangeAt(sqlite, c.seq)
  return {
    name: c.name,
    seq: c.seq,
    lagChanges: Math.max(0, last - c.seq),
    lagSeconds: next === undefined ? 0 : Math.max(0, Math.round((now - parseInstant(next)) / 1000)),
    lastError: c.lastError,
    lastErrorAt: c.lastErrorAt,
    updatedAt: c.updatedAt,
    target: c.target,
    schema: c.schema,
    loadedAt: c.loadedAt,
    appliedAt: c.appliedAt,
  }
}
