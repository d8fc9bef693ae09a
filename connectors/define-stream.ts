// A stream is data: what to read, how to page, which table with which columns, and how deletions
// show; the row mapping is compiled from the declared columns (columns.ts). Connectors are
// declarations and do no I/O (docs/architecture.md, Layers).
import type { Payload, RecordRow, SqlCell } from '../src/model/rows.js'
import type { RecordStream } from '../src/model/streams.js'
import { canonicalTime, canonicalTimeOrText } from '../src/model/timestamps.js'
import { compileChild, compileColumns, recordTable, type ChildDeclaration, type MappedColumn } from './columns.js'

/** What a connector declares: the stream's data, its table's own columns and its child tables. */
export type StreamDefinition = Omit<RecordStream, 'kind' | 'toRow' | 'tables' | 'childTables'> & {
  /** One sentence on what a row of the stream's table is. */
  description: string
  /** The typed columns (snake_case) of the documented fields; id, timestamps and raw are added. */
  columns: readonly MappedColumn[]
  /** Child tables whose rows are replaced with the parent's. */
  children?: readonly ChildDeclaration[]
}

export function defineStream(definition: StreamDefinition): RecordStream {
  const { columns, children = [], description, ...stream } = definition
  const own = recordTable(stream.table, description, columns)
  const compiled = children.map((c) => compileChild(stream.table, c))
  const mapColumns = compileColumns(own)
  const toRow = (payload: Payload): RecordRow => {
    const { id, updated_at, raw, created_at } = recordBase(payload)
    // A fresh object per row, created_at added in place rather than copied.
    const cols = mapColumns(payload)
    cols.created_at = created_at
    const row: RecordRow = { id, updated_at, raw, columns: cols }
    // Every child table is listed, even when empty: its old rows are replaced by none.
    if (compiled.length > 0) row.children = compiled.map((c) => c.rows(payload, id))
    return row
  }
  return {
    kind: 'records',
    ...stream,
    tables: [own, ...compiled.map((c) => c.spec)],
    childTables: children.map((c) => ({ table: c.table, parentColumn: c.parentColumn })),
    toRow,
  }
}

/** The fields every mirrored record has, from the payload: id, timestamps, raw. */
export function recordBase(payload: Payload): Pick<RecordRow, 'id' | 'updated_at' | 'raw'> & { created_at: string | null } {
  const id = payload.id
  if (typeof id !== 'string' || id === '') throw new TypeError('record without an id')
  let updated_at: string | null
  try {
    updated_at = canonicalTime(payload.updatedAt)
  } catch {
    updated_at = null
  }
  if (updated_at === null) throw new TypeError(`record ${id} without a valid updatedAt`)
  return { id, updated_at, raw: JSON.stringify(payload), created_at: canonicalTimeOrText(payload.createdAt) }
}

/**
 * The row of a payload read leniently (reference data, account metadata): the id as the caller found
 * it, the timestamps as they come (an updatedAt that is not an instant is kept as text, a missing one
 * as ''), `columns` after created_at.
 */
export function lenientRow(id: string, payload: Payload, columns: Record<string, SqlCell>): RecordRow {
  return {
    id,
    updated_at: canonicalTimeOrText(payload.updatedAt) ?? '',
    raw: JSON.stringify(payload),
    columns: { created_at: canonicalTimeOrText(payload.createdAt), ...columns },
  }
}
