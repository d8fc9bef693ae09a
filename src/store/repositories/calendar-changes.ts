// calendar_changes (migration 0008): the change records read from a calendar's feed, one row each.
// A page of at most a hundred records after each trigger: typed queries.
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { CalendarChangesTable } from '../sqlite/mirror-schema.js'
import { mirrorQuery, run } from '../sqlite/typed-query.js'

/** A change record as the feed's reader maps it; the integration and fetch time are the store's. */
export type CalendarChange = Omit<CalendarChangesTable, 'integration' | 'fetched_at'>

const CHUNK = 500

export class CalendarChangeStore {
  readonly #sqlite: Sqlite
  readonly #integration: string

  constructor(sqlite: Sqlite, integration: string) {
    this.#sqlite = sqlite
    this.#integration = integration
  }

  /**
   * Stores the changes not stored yet (by `change_key`: a re-read of an overlapping window adds
   * nothing twice); returns how many were new. Synchronous: run it in the transaction that also
   * moves the feed's resume point.
   */
  insert(changes: readonly CalendarChange[], fetchedAt: string): number {
    let stored = 0
    // One statement per CHUNK rows: a page larger than the feed's documented size stays under
    // SQLite's limit of bound parameters (32,766).
    for (let i = 0; i < changes.length; i += CHUNK) {
      stored += run(
        this.#sqlite,
        mirrorQuery
          .insertInto('calendar_changes')
          .values(changes.slice(i, i + CHUNK).map((c) => ({ ...c, integration: this.#integration, fetched_at: fetchedAt })))
          .onConflict((oc) => oc.columns(['integration', 'change_key']).doNothing()),
      )
    }
    return stored
  }
}
