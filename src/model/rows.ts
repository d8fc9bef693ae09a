// What a mirrored row is, independent of where it is written: the values a column takes, a record's
// row with its child rows, and the loosely-typed upstream payload connectors map from. Connectors
// build these (connectors/), the store writes them (src/store/repositories/record-writer.ts).

/** An upstream JSON object as received. */
export type Payload = Readonly<Record<string, unknown>>

/** One value of a SQL column, as better-sqlite3 reads and writes it (safe integers on) and as the Postgres replica takes it. */
export type SqlCell = string | number | bigint | Buffer | null

export interface ChildRows {
  table: string
  /** The child table's column holding the parent id. */
  parentColumn: string
  rows: Record<string, SqlCell>[]
}

export interface RecordRow {
  id: string
  /** Canonical UTC text; newer-wins compares it. */
  updated_at: string
  /** The latest full payload as received (JSON text). */
  raw: string
  /** Every other column of the table (snake_case), created_at included. */
  columns: Record<string, SqlCell>
  /** Child rows, replaced whenever the parent changes. Every table is listed even when empty. */
  children?: ChildRows[]
}
