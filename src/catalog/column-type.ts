import { sqliteType, type ColumnSpec } from '../model/table-spec.js'

/** The type a column has in the mirror: its declared type when a library chose one, else its kind's. */
export function mirrorType(column: ColumnSpec): string {
  return column.declaredType ?? sqliteType(column.kind)
}
