// client_fields (migration 0007): the client schema's custom fields, behind the client_properties
// view. Replaced whole on every discovery (a few dozen rows): typed queries.
import type { Sqlite } from './mirror-database.js'
import type { ClientFieldsTable } from './mirror-schema.js'
import { mirrorQuery, run } from './typed-query.js'

/** A field as the schema route gives it, mapped; its sync time is the store's. */
export type ClientField = Omit<ClientFieldsTable, 'synced_at'>

/** Replaces every stored field with `fields`, in one transaction. */
export function replaceClientFields(sqlite: Sqlite, fields: readonly ClientField[], syncedAt: string): void {
  sqlite.transaction(() => {
    run(sqlite, mirrorQuery.deleteFrom('client_fields'))
    for (const f of fields) run(sqlite, mirrorQuery.insertInto('client_fields').values({ ...f, synced_at: syncedAt }))
  })()
}
