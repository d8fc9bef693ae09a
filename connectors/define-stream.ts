// A stream is data: what to read, how to page, which table, how a payload becomes rows, and how
// deletions show: connectors are declarations and do no I/O (docs/architecture.md, Layers).
import type { ChildRows, RecordRow, SqlValue } from '../src/store/record-writer.js'
import type { Payload } from './mapping.js'
import { canonicalTime, canonicalTimeOrText } from '../src/store/timestamps.js'

export type Paging = 'updated-keyset'

export interface RecordStream {
  name: string
  /** v1 list route; `${route}/${id}` is the single-record GET. */
  route: string
  scope: string
  paging: Paging
  table: string
  /** Child tables written with the parent, for the contract tests and for `--full` resets. */
  childTables: readonly { table: string; parentColumn: string }[]
  toRow: (payload: Payload) => RecordRow
  deletions: { events: readonly string[]; reconcile: boolean }
  /** Webhook events whose payload is a full snapshot of this resource. */
  snapshotEvents: readonly string[]
}

/** What a connector declares: the stream's data plus how a payload maps to columns and children. */
export type StreamDefinition = Omit<RecordStream, 'toRow'> & {
  /**
   * The typed columns (snake_case) of the documented fields; id, timestamps and raw are added.
   * Returns a fresh object on every call: toRow adds created_at to it.
   */
  columns: (payload: Payload) => Record<string, SqlValue>
  /** Child rows replaced with the parent, one entry per child table (listed even when empty). */
  children?: (payload: Payload, id: string) => ChildRows[]
}

export function defineStream(definition: StreamDefinition): RecordStream {
  const { columns, children, ...stream } = definition
  return {
    ...stream,
    // The hot path of every sweep page: the connector's fresh columns object gets created_at added
    // in place rather than copied, and the row is built without spreads.
    toRow: (payload) => {
      const { id, updated_at, raw, created_at } = recordBase(payload)
      const cols = columns(payload)
      cols.created_at = created_at
      const row: RecordRow = { id, updated_at, raw, columns: cols }
      if (children !== undefined) row.children = children(payload, id)
      return row
    },
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
  return { id, updated_at, created_at: canonicalTimeOrText(payload.createdAt), raw: JSON.stringify(payload) }
}
