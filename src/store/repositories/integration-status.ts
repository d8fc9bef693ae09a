// integration_status (migration 0006): the last status read of each calendar integration, or why
// the last read failed. One row per integration, written after each trigger: typed queries.
import type { Sqlite } from '../sqlite/mirror-database.js'
import { mirrorQuery, run } from '../sqlite/typed-query.js'

/** A status as read from the integration's status route. */
export interface IntegrationStatusRead {
  connected: boolean | null
  email: string | null
  lastSyncAt: string | null
  calendarId: string | null
  /** The answer's data as received (JSON text). */
  raw: string
}

export class IntegrationStatusStore {
  readonly #sqlite: Sqlite

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
  }

  /** Stores a successful read: every field replaced, the error cleared. */
  recordRead(name: string, status: IntegrationStatusRead, checkedAt: string): void {
    const row = {
      name,
      connected: status.connected === null ? null : Number(status.connected),
      email: status.email,
      last_sync_at: status.lastSyncAt,
      calendar_id: status.calendarId,
      error: null,
      raw: status.raw,
      checked_at: checkedAt,
    }
    run(
      this.#sqlite,
      mirrorQuery
        .insertInto('integration_status')
        .values(row)
        .onConflict((oc) =>
          oc.column('name').doUpdateSet((eb) => ({
            connected: eb.ref('excluded.connected'),
            email: eb.ref('excluded.email'),
            last_sync_at: eb.ref('excluded.last_sync_at'),
            calendar_id: eb.ref('excluded.calendar_id'),
            error: eb.ref('excluded.error'),
            raw: eb.ref('excluded.raw'),
            checked_at: eb.ref('excluded.checked_at'),
          })),
        ),
    )
  }

  /** Stores why a read failed, keeping the last known values. */
  recordError(name: string, error: string, checkedAt: string): void {
    run(
      this.#sqlite,
      mirrorQuery
        .insertInto('integration_status')
        .values({ name, error, checked_at: checkedAt })
        .onConflict((oc) =>
          oc.column('name').doUpdateSet((eb) => ({ error: eb.ref('excluded.error'), checked_at: eb.ref('excluded.checked_at') })),
        ),
    )
  }
}
