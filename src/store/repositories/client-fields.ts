// client_fields (migration 0007): the client schema's custom fields, behind the client_properties
// view. Replaced whole on every discovery (a few dozen rows): typed queries.
import type { SqlCell } from '../../model/rows.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { ClientFieldsTable } from '../sqlite/mirror-schema.js'
import { mirrorQuery, run } from '../sqlite/typed-query.js'

/** A field as the schema route gives it, mapped; its sync time is the store's. */
export type ClientField = Omit<ClientFieldsTable, 'synced_at'>

/**
 * Replaces every stored field with `fields`, in one transaction. A row is what the connector's
 * declaration of client_fields maps (connectors/custom-objects.ts, `clientFieldRow`).
 */
export function replaceClientFields(sqlite: Sqlite, fields: readonly Readonly<Record<string, SqlCell>>[], syncedAt: string): void {
  sqlite.transaction(() => {
    run(sqlite, mirrorQuery.deleteFrom('client_fields'))
    // The declared columns of client_fields, which test/integration/store/declared-tables.test.ts
    // holds equal to the table: the row has this shape.
    for (const f of fields) run(sqlite, mirrorQuery.insertInto('client_fields').values({ ...(f as ClientField), synced_at: syncedAt }))
  })()
}
