// What a mirrored table is, as data: its columns with their types, its key, where each column's value
// comes from upstream, and what it means. Stream declarations (connectors/) and the store's own state
// tables are written in this shape; the mirror's migrations are checked against it, and every reader
// that needs to know a table (a destination's DDL, the schema catalog, exports) derives from it.

/**
 * A column's type, independent of the database:
 * - `text`: a string.
 * - `time`: an instant, stored in the mirror as canonical ISO-8601 UTC text (`2025-01-02T03:04:05.000Z`).
 *   A value upstream sent that is not an instant is kept as text in the mirror (it is in `raw` too).
 * - `real`: a double-precision number.
 * - `integer`: a 64-bit integer.
 * - `flag`: a boolean, stored in SQLite as 0 or 1.
 * - `json`: an object or array, stored in SQLite as JSON text.
 * - `bytes`: a byte string.
 */
export type ColumnKind = 'text' | 'time' | 'real' | 'integer' | 'flag' | 'json' | 'bytes'

export interface ColumnSpec {
  readonly name: string
  readonly kind: ColumnKind
  readonly nullable: boolean
  /**
   * Where the value comes from: the upstream payload path it maps from (`jobPhone.number`;
   * alternatives as `jobType|type`), or undefined for a column fsm-sync computes itself.
   */
  readonly from?: string
  /** One sentence on what the column holds, for the schema catalog and docs/tables.md. */
  readonly description: string
  /**
   * The type the column is declared with in SQLite when it is not `sqliteType(kind)`: only a table
   * a library creates (kysely_migration's `varchar(255)`).
   */
  readonly declaredType?: string
}

export interface TableSpec {
  readonly name: string
  /** One sentence on what a row is. */
  readonly description: string
  /** `data`: the account's data, replicated to destinations; `state`: the daemon's own bookkeeping. */
  readonly role: 'data' | 'state'
  readonly primaryKey: readonly string[]
  readonly columns: readonly ColumnSpec[]
  /** A child table: its rows are replaced with the parent row that owns them. */
  readonly parent?: { readonly table: string; readonly column: string }
  /**
   * A table whose rows are only inserted, never changed, with this time column set when inserted,
   * and removed oldest first by it (retention): a copy elsewhere follows it by that column.
   */
  readonly appendedBy?: string
}

/** The SQLite storage class a column kind is declared with in a STRICT table. */
export function sqliteType(kind: ColumnKind): 'TEXT' | 'REAL' | 'INTEGER' | 'BLOB' {
  switch (kind) {
    case 'text':
    case 'time':
    case 'json':
      return 'TEXT'
    case 'real':
      return 'REAL'
    case 'integer':
    case 'flag':
      return 'INTEGER'
    case 'bytes':
      return 'BLOB'
  }
}

/**
 * How a table's changes can be followed: `logged` when every write of a row is recorded in
 * change_log (the record writer keeps such tables: they have `updated_at` and `deleted_at`, and no
 * parent), `child` when its rows are replaced with a logged parent's, `whole` when neither (reference
 * snapshots without deletion marks, feeds, the custom-object types): those are compared or copied
 * whole. Destinations and incremental exports both read it from here.
 */
export function changeTracking(table: TableSpec, all: readonly TableSpec[]): 'logged' | 'child' | 'whole' {
  const logged = (t: TableSpec) =>
    t.parent === undefined && t.columns.some((c) => c.name === 'updated_at') && t.columns.some((c) => c.name === 'deleted_at')
  if (logged(table)) return 'logged'
  const parent = table.parent === undefined ? undefined : all.find((t) => t.name === table.parent!.table)
  return parent !== undefined && logged(parent) ? 'child' : 'whole'
}
