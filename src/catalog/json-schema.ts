// A table's rows as a JSON Schema (draft 2020-12), and the whole catalog as one document shaped like
// an Airbyte catalog (the `streams` array of its `discover` message: `name`, `json_schema`,
// `supported_sync_modes`, `source_defined_primary_key`), so tools that read such catalogs find the
// fields where they expect them. The schemas describe rows as `fsm-sync export --format jsonl`
// writes them (flags as booleans, JSON columns as JSON values, bytes as base64, a time or JSON value
// that does not fit its kind as null: src/export/values.ts); each property also
// carries the mirror's SQLite type, the column kind and the upstream field as `x-` annotations.
// `incremental` is advertised only for the tables `export --after-seq` reads changes of (the data
// tables, not the views), with the two change columns its rows carry in front.
import { changeTracking, type ColumnKind, type ColumnSpec, type TableSpec } from '../model/table-spec.js'
import { CHANGE_COLUMNS, nullableWhenExported } from '../export/values.js'
import { DATA_TABLES } from '../../connectors/index.js'
import { mirrorType } from './column-type.js'

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

export type JsonSchema = Record<string, unknown>

function valueSchema(kind: ColumnKind): JsonSchema {
  switch (kind) {
    case 'text':
      return { type: 'string' }
    case 'time':
      return { type: 'string', format: 'date-time' }
    case 'real':
      return { type: 'number' }
    case 'integer':
      return { type: 'integer' }
    case 'flag':
      return { type: 'boolean' }
    case 'json':
      // Any JSON value (objects and arrays in practice): no `type` keyword.
      return {}
    case 'bytes':
      return { type: 'string', contentEncoding: 'base64' }
  }
}

export function columnSchema(column: ColumnSpec): JsonSchema {
  const base = valueSchema(column.kind)
  // A JSON column has no `type`: any JSON value, null included.
  const schema = nullableWhenExported(column) && typeof base.type === 'string' ? { ...base, type: [base.type, 'null'] } : base
  return {
    ...schema,
    description: column.description,
    'x-sqlite-type': mirrorType(column),
    'x-kind': column.kind,
    ...(column.from === undefined ? {} : { 'x-from': column.from }),
  }
}

/**
 * The JSON Schema of one table's rows: every column present, nullability in each column's type. With
 * `incremental`, also the change columns `export --after-seq` writes in front of each row (optional:
 * a whole-table export has none).
 */
export function rowSchema(table: TableSpec, incremental = false): JsonSchema {
  const changeColumns = incremental
    ? CHANGE_COLUMNS.map((c) => [
        c.name,
        { ...columnSchema(c), description: `${c.description} Only in the rows of \`fsm-sync export --after-seq\`.` },
      ])
    : []
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: table.name,
    description: table.description,
    type: 'object',
    properties: Object.fromEntries([...changeColumns, ...table.columns.map((c) => [c.name, columnSchema(c)])]),
    required: table.columns.map((c) => c.name),
    additionalProperties: false,
    'x-role': table.role,
    'x-primary-key': table.primaryKey,
    ...(table.parent === undefined ? {} : { 'x-parent': table.parent }),
  }
}

export interface CatalogStream {
  name: string
  /** The fsm-sync stream (`--stream` name) whose sync fills the table, when one does. */
  'x-fsm-stream'?: string
  json_schema: JsonSchema
  supported_sync_modes: string[]
  /** With `incremental`: the cursor is the change_log seq, `change_seq` in the changes' rows. */
  source_defined_cursor?: boolean
  default_cursor_field?: string[]
  source_defined_primary_key: string[][]
}

export interface CatalogDocument {
  $comment: string
  streams: CatalogStream[]
}

/**
 * Whether `export --after-seq` reads the table's changes: a declared data table whose writes
 * change_log records, or a child of one; no view, and no table kept whole (changeTracking).
 */
export function exportsChanges(table: TableSpec): boolean {
  return DATA_TABLES.includes(table) && changeTracking(table, DATA_TABLES) !== 'whole'
}

/**
 * The catalog of the given tables. Every table is read whole by `fsm-sync export`; the tables whose
 * changes `export --after-seq` reads from change_log (`incremental`) also say so.
 */
export function catalogDocument(
  tables: readonly TableSpec[],
  streamOf: (table: string) => string | undefined = () => undefined,
  incremental: (table: TableSpec) => boolean = exportsChanges,
): CatalogDocument {
  return {
    $comment:
      'Shaped like an Airbyte catalog (streams[].name, json_schema, supported_sync_modes, source_defined_primary_key); each json_schema is JSON Schema draft 2020-12 describing rows as `fsm-sync export --format jsonl` writes them.',
    streams: tables.map((t) => {
      const stream = streamOf(t.name)
      const changes = incremental(t)
      return {
        name: t.name,
        ...(stream === undefined ? {} : { 'x-fsm-stream': stream }),
        json_schema: rowSchema(t, changes),
        supported_sync_modes: changes ? ['full_refresh', 'incremental'] : ['full_refresh'],
        ...(changes ? { source_defined_cursor: true, default_cursor_field: ['change_seq'] } : {}),
        source_defined_primary_key: t.primaryKey.map((k) => [k]),
      }
    }),
  }
}
