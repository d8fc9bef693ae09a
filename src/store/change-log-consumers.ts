// Who reads change_log, and how far (docs/architecture.md, The Postgres destination). A consumer is a
// destination fsm-sync feeds itself (kind `destination`, its seq moved after each batch it committed)
// or a named reader a user registered (`fsm-sync consumers add NAME`; it moves its own seq with
// `fsm-sync consumers ack NAME SEQ`). Retention prunes change_log rows only once every consumer has
// read them and they are older than `retention.changeLogDays`; a consumer further behind than
// `retention.changeLogHoldDays` stops holding rows back, and a destination that finds its next
// change pruned loads itself again from a snapshot.
import { parseInstant } from '../model/timestamps.js'
import type { Sqlite } from './mirror-database.js'

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
}

interface ConsumerRow {
  name: string
  kind: ConsumerKind
  seq: number
  registered_at: string
  updated_at: string
  last_error: string | null
  last_error_at: string | null
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
          `UPDATE change_log_consumers SET seq = max(seq, ?), updated_at = ?, last_error = NULL, last_error_at = NULL WHERE name = ?`,
        )
        .run(seq, now, name).changes > 0
    )
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
}

/** How far behind the mirror a consumer is, from the mirror alone; undefined when it is not registered. */
export function consumerLag(sqlite: Sqlite, name: string, now: number): ConsumerLag | undefined {
  const c = new ChangeLogConsumers(sqlite).get(name)
  if (c === undefined) return undefined
  const last = lastChangeSeq(sqlite)
  const next = nextChangeAt(sqlite, c.seq)
  return {
    name,
    seq: c.seq,
    lagChanges: Math.max(0, last - c.seq),
    lagSeconds: next === undefined ? 0 : Math.max(0, Math.round((now - parseInstant(next)) / 1000)),
    lastError: c.lastError,
    lastErrorAt: c.lastErrorAt,
    updatedAt: c.updatedAt,
  }
}
