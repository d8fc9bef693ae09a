// The mirror's record of recent request starts (migration 0009). The governor keeps its sliding
// window in memory; without this, a process started seconds after another one (a restart after
// SIGKILL, a cron `fsm-sync sync` after the daemon stopped) would begin with an empty minute and
// could start `limit` requests on top of what the key spent just before: the soak saw 61 starts in
// one 60 s window against a budget of 60 across a restart.
import type { Sqlite } from './mirror-database.js'

/** Inserts between prunes: the table stays near one window's worth of rows. */
const PRUNE_EVERY = 64

export class RequestLedger {
  readonly #insert
  readonly #prune
  readonly #recent
  readonly #windowMs: number
  #sincePrune = 0

  constructor(sqlite: Sqlite, windowMs = 60_000) {
    this.#windowMs = windowMs
    this.#insert = sqlite.prepare('INSERT INTO request_starts (at_ms) VALUES (?)')
    this.#prune = sqlite.prepare('DELETE FROM request_starts WHERE at_ms <= ?')
    this.#recent = sqlite.prepare('SELECT at_ms FROM request_starts WHERE at_ms > ? AND at_ms <= ? ORDER BY at_ms').pluck()
  }

  /**
   * Starts within the window that ends at `now`, oldest first (what a new governor must count).
   * A start after `now` means the wall clock stepped back since it was recorded: it is left out,
   * since counting it would hold every request until the clock caught up.
   */
  recent(now: number): number[] {
    // Pruned here too: a short run (a cron `sync` of a few requests) never reaches PRUNE_EVERY.
    this.#prune.run(now - this.#windowMs)
    return this.#recent.all(now - this.#windowMs, now) as number[]
  }

  record(at: number): void {
    this.#insert.run(at)
    if (++this.#sincePrune >= PRUNE_EVERY) {
      this.#sincePrune = 0
      this.#prune.run(at - this.#windowMs)
    }
  }
}
