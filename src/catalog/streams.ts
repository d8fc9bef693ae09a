// Which tables hold a stream's rows, read from the stream declarations (connectors/), for
// `fsm-sync schema --stream S`: a stream's own tables, its child tables, and for custom objects the
// types table, custom_records and the views.
import { RECORD_STREAMS } from '../../connectors/index.js'
import { REFERENCE_STREAMS } from '../../connectors/reference.js'
import { apiKeys, webhookDeliveries, webhookEndpoints } from '../../connectors/account-metadata.js'
import { customObjects, customObjectTypesTable, customRecordsTable } from '../../connectors/custom-objects.js'
import { OBJECT_STREAM } from '../config/index.js'
import type { TableSpec } from '../model/table-spec.js'
import { viewName } from '../store/custom-object-views.js'

/** Stream name -> the tables holding its rows, as each stream declares them (its own, its children's). */
function streamTables(): Map<string, string[]> {
  const map = new Map<string, string[]>()
  const add = (stream: string, tables: readonly { name: string }[]) =>
    map.set(stream, [...(map.get(stream) ?? []), ...tables.map((t) => t.name)])
  for (const s of [...RECORD_STREAMS, ...REFERENCE_STREAMS, webhookEndpoints, webhookDeliveries, apiKeys]) add(s.name, s.tables)
  add(customObjects.name, [customObjectTypesTable, customRecordsTable])
  return map
}

/**
 * The tables of a stream (`jobs`, `team`, `objects`, `objects:<slug>`) or a table named directly,
 * from the catalog, in catalog order; undefined when the name is neither.
 */
export function tablesOfStream(catalog: readonly TableSpec[], name: string): TableSpec[] | undefined {
  const object = OBJECT_STREAM.exec(name)
  if (object !== null) {
    const view = viewName(object[1]!)
    return catalog.filter((t) => t.name === view)
  }
  const tables = streamTables().get(name)
  if (tables !== undefined) {
    const views = name === customObjects.name ? catalog.filter((t) => t.name.startsWith('obj_')).map((t) => t.name) : []
    const wanted = new Set([...tables, ...views])
    return catalog.filter((t) => wanted.has(t.name))
  }
  const table = catalog.find((t) => t.name === name)
  return table === undefined ? undefined : [table, ...catalog.filter((t) => t.parent?.table === name)]
}

/** The stream names `--stream` takes, for the message that lists them. */
export function streamNames(): string[] {
  return [...streamTables().keys()]
}
