// Which tables the destination replicates, and how each is declared: the one place the destination
// learns it. Every data table of the stream declarations, and change_log from the store's state
// tables; the fixed views over them (DATA_VIEWS) are built beside the custom objects' views.
import { DATA_TABLES, DATA_VIEWS } from '../../connectors/index.js'
import type { TableSpec } from '../model/table-spec.js'
import { STATE_TABLES } from '../store/repositories/state-tables.js'

const CHANGE_LOG = STATE_TABLES.find((t) => t.name === 'change_log')!

const TABLES: readonly TableSpec[] = [...DATA_TABLES, CHANGE_LOG]

export function destinationTables(): readonly TableSpec[] {
  return TABLES
}

/** The fixed views declared over the data tables (each custom object's view follows its schema). */
export function destinationViews(): readonly TableSpec[] {
  return DATA_VIEWS
}
