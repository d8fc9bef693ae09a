// Which tables hold a stream's rows, read from the stream registry (connectors/index.ts, STREAMS),
// for `fsm-sync schema --stream S`: the tables a stream declares, and for custom objects also the
// views of the objects the mirror holds.
import { STREAMS } from '../../connectors/index.js'
import { OBJECT_STREAM } from '../../connectors/selection.js'
import type { TableSpec } from '../model/table-spec.js'
import { viewName } from '../store/repositories/custom-object-views.js'
import { catalogTables } from './catalog.js'

/**
 * The tables of a stream (`jobs`, `team`, `objects`, `objects:<slug>`) or a table named directly,
 * from the catalog, in catalog order; undefined when the name is neither.
 */
export function tablesOfStream(catalog: readonly TableSpec[], name: string): TableSpec[] | undefined {
  const object = name.match(OBJECT_STREAM)
  if (object !== null && STREAMS.some((s) => s.kind === 'objects' && s.name === object[1])) {
    const view = viewName(object[2]!)
    return catalog.filter((t) => t.name === view)
  }
  const stream = STREAMS.find((s) => s.name === name)
  if (stream !== undefined) {
    const wanted = new Set(stream.tables.map((t) => t.name))
    // The custom objects' views: in the catalog of a mirror, not among the declarations.
    const declared = new Set(catalogTables().map((t) => t.name))
    const objectView = (t: TableSpec) => stream.kind === 'objects' && t.name.startsWith('obj_') && !declared.has(t.name)
    return catalog.filter((t) => wanted.has(t.name) || objectView(t))
  }
  const table = catalog.find((t) => t.name === name)
  return table === undefined ? undefined : [table, ...catalog.filter((t) => t.parent?.table === name)]
}

/** The stream names `--stream` takes, for the message that lists them. */
export function streamNames(): string[] {
  return STREAMS.map((s) => s.name)
}

/** The stream whose sync fills a table (`objects` for the custom objects' views), if any. */
export function streamOfTable(table: string): string | undefined {
  const declared = STREAMS.find((s) => s.tables.some((t) => t.name === table))
  if (declared !== undefined) return declared.name
  const objects = STREAMS.find((s) => s.kind === 'objects')
  return objects !== undefined && table.startsWith('obj_') && !catalogTables().some((t) => t.name === table) ? objects.name : undefined
}
