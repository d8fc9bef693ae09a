// The mirror's record of recent request starts (migration 0009). The governor keeps its sliding
// window in memory; without this, a process started seconds after another one (a restart after
// SIGKILL, a cron `fsm-sync sync` after the daemon stopped) would begin with an empty minute and
// could start `limit` requests on top of what the key spent just before: the soak saw 61 starts in
// one 60 s window against a budget of 60 across a restart.
// Processes running at the same time (the daemon and a cron `reconcile`) share it too: each start
// is claimed here in one short write transaction, so together they never pass the limit.
import type { Sqlite } from '../sqlite/mirror-database.js'
import { systemClock } from '../../model/clock.js'

/** Inserts between prunes: the table stays near one window's worth of rows. */
const PRUNE_EVERY = 64
/** Kept past the window: a governor claims over the window plus its jitter margin (250 ms). */
const PRUNE_SLACK_MS = 1_000

export class RequestLedger {
  readonly #insert
  readonly #prune
  readonly #recent
  readonly #since
  readonly #windowMs: number
  readonly #now: () => number
  readonly #claim: (limit: number, windowMs: number) => { granted: true } | { granted: false; retryAt: number }
  #sincePrune = 0

  constructor(sqlite: Sqlite, windowMs = 60_000, now: () => number = () => systemClock.now()) {
    this.#windowMs = windowMs
    this.#now = now
    // Raw statements, prepared once: every upstream request start claims its slot here.
    this.#insert = sqlite.prepare('INSERT INTO request_starts (at_ms) VALUES (?)')
    this.#prune = sqlite.prepare('DELETE FROM request_starts WHERE at_ms <= ?')
    // A start recorded after `now` (the wall clock stepped back since) counts as one made now: left
    // out, a process would get a whole window's worth of starts on top of it (91 in 60 s after a
    // 30 s step back); kept at its own time, it would hold every start until the clock caught up.
    this.#recent = sqlite.prepare('SELECT min(at_ms, ?) FROM request_starts WHERE at_ms > ? ORDER BY at_ms').pluck()
    this.#since = sqlite.prepare('SELECT count(*) FROM request_starts WHERE at_ms > ?').pluck()
    // The limit-th most recent start in the window: while there is one, the window is full.
    const blocking = sqlite.prepare('SELECT at_ms FROM request_starts WHERE at_ms > ? ORDER BY at_ms DESC LIMIT 1 OFFSET ?').pluck()
    const tx = sqlite.transaction((limit: number, windowMs: number): { granted: true } | { granted: false; retryAt: number } => {
      // Read inside the write lock: a start another process committed while we waited for the lock
      // is counted.
      const now = this.#now()
      const oldest = blocking.get(now - windowMs, Math.max(0, limit - 1)) as number | undefined
      if (oldest !== undefined) return { granted: false, retryAt: Math.min(oldest, now) + windowMs }
      this.record(now)
      return { granted: true }
    })
    // IMMEDIATE: the write lock is taken before the count, so two processes never both see room.
    this.#claim = (limit, windowMs) => tx.immediate(limit, windowMs)
  }

  /**
   * Grants a start now when fewer than `limit` starts (of every process on this mirror) lie in the
   * last `windowMs`, and records it; otherwise says when the start in the way leaves the window.
   * One short IMMEDIATE transaction; throws what SQLite throws (busy past the timeout, a full disk).
   */
  claim(limit: number, windowMs: number): { granted: true } | { granted: false; retryAt: number } {
    return this.#claim(limit, windowMs)
  }

  /**
   * Starts within the window that ends at `now`, oldest first (what a new governor must count).
   * A start after `now` means the wall clock stepped back since it was recorded: it is counted as
   * made at `now`.
   */
  recent(now: number): number[] {
    // Pruned here too: a short run (a cron `sync` of a few requests) never reaches PRUNE_EVERY.
    this.#prune.run(now - this.#windowMs - PRUNE_SLACK_MS)
    return this.#recent.all(now, now - this.#windowMs) as number[]
  }

  /** Starts of every process on this mirror after `from` (a start in the future included). */
  startsSince(from: number): number {
    return this.#since.get(from) as number
  }

  record(at: number): void {
    this.#insert.run(at)
    if (++this.#sincePrune >= PRUNE_EVERY) {
      this.#sincePrune = 0
      this.#prune.run(at - this.#windowMs - PRUNE_SLACK_MS)
    }
  }
}
