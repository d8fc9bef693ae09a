// What a mirrored row is, independent of where it is written: the values a column takes, a record's
// row with its child rows, and the loosely-typed upstream payload connectors map from. Connectors
// build these (connectors/), the store writes them (src/store/record-writer.ts).

/** An upstream JSON object as received. */
export type Payload = Readonly<Record<string, unknown>>

export type SqlValue = string | number | bigint | null

export interface ChildRows {
  table: string
  /** The child table's column holding the parent id. */
  parentColumn: string
  rows: Record<string, SqlValue>[]
}

export interface RecordRow {
  id: string
  /** Canonical UTC text; newer-wins compares it. */
  updated_at: string
  /** The latest full payload as received (JSON text). */
  raw: string
  /** Every other column of the table (snake_case), created_at included. */
  columns: Record<string, SqlValue>
  /** Child rows, replaced whenever the parent changes. Every table is listed even when empty. */
  children?: ChildRows[]
}
