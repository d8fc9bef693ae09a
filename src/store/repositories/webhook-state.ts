// webhook_state: small values the webhook side keeps by key (the delivery-gap cursor). Read and
// written a few times an hour: typed queries.
import type { Sqlite } from '../sqlite/mirror-database.js'
import { firstRow, mirrorQuery, run } from '../sqlite/typed-query.js'

export class WebhookStateStore {
  readonly #sqlite: Sqlite

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
  }

  /** The value stored under `key`, or undefined. */
  get(key: string): string | undefined {
    return firstRow(this.#sqlite, mirrorQuery.selectFrom('webhook_state').select('value').where('key', '=', key))?.value
  }

  /** Stores `value` under `key`, replacing what was there. */
  set(key: string, value: string, nowIso: string): void {
    run(
      this.#sqlite,
      mirrorQuery
        .insertInto('webhook_state')
        .values({ key, value, updated_at: nowIso })
        .onConflict((oc) =>
          oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), updated_at: eb.ref('excluded.updated_at') })),
        ),
    )
  }
}
