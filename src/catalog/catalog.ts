// The schema catalog: every table the mirror holds, as TableSpecs. The declarations come from one
// place (catalogTables); the custom objects' views, which differ per account, are read from the
// mirror when there is one. `fsm-sync schema`, docs/tables.md and `fsm-sync export` all read this.
import { existsSync } from 'node:fs'
import type { TableSpec } from '../model/table-spec.js'
import { openMirror, type Sqlite } from '../store/sqlite/mirror-database.js'
import { DATA_TABLES, DATA_VIEWS } from '../../connectors/index.js'
import { STATE_TABLES } from '../store/repositories/state-tables.js'
import { customObjectViewSpecs } from './custom-object-tables.js'

/**
 * Every declared table and view in declaration order: the account's data (connectors/), its fixed
 * views, then the daemon's state (src/store/repositories/state-tables.ts). The one place the catalog reads
 * declarations from.
 */
export function catalogTables(): readonly TableSpec[] {
  return [...DATA_TABLES, ...DATA_VIEWS, ...STATE_TABLES]
}

/** The declared tables plus the views of the custom objects the mirror holds. */
export function mirrorCatalog(sqlite: Sqlite, declared: readonly TableSpec[] = catalogTables()): TableSpec[] {
  return [...declared, ...customObjectViewSpecs(sqlite)]
}

/**
 * The catalog of the mirror file: with its custom objects' views when the file exists, the
 * declarations alone when it does not (nothing is created: the file is opened read-only, if at all).
 */
export async function readCatalog(file: string, declared: readonly TableSpec[] = catalogTables()): Promise<TableSpec[]> {
  if (!existsSync(file)) return [...declared]
  const mirror = await openMirror(file, { readonly: true })
  try {
    return mirrorCatalog(mirror.sqlite, declared)
  } finally {
    await mirror.close()
  }
}
