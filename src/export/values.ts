// A mirror value as the declared kind of its column: the one conversion every export format starts
// from, so a Parquet, CSV and JSONL file of the same snapshot hold the same values. A value that does
// not fit its kind (a `time` column holding text upstream sent that is no instant, a JSON column
// holding text that is not JSON) becomes NULL and is counted: a warehouse load job would otherwise
// reject the whole file. The row's `raw` keeps such a value as upstream sent it. An empty `time`
// value is the mirror's own "no time" (updated_at is NOT NULL, and '' where upstream gives none: an
// API key, a legacy record, a tombstone): NULL too, but no misfit.
import type { SqlCell } from '../model/rows.js'
import type { ColumnKind, ColumnSpec } from '../model/table-spec.js'
import { canonicalTime, parseInstant } from '../model/timestamps.js'

/**
 * Whether a column's exported values may be NULL: when the column is nullable, and for the kinds a
 * value may not fit (a `time` column holds '' for a legacy record without a time; a JSON column
 * could hold text that is not JSON), whose misfits are written as NULL.
 */
export function nullableWhenExported(column: ColumnSpec): boolean {
  return column.nullable || column.kind === 'time' || column.kind === 'json'
}

/**
 * The columns in front of each row `export --after-seq` writes (the catalog describes them too:
 * src/catalog/json-schema.ts).
 */
export const CHANGE_COLUMNS: readonly ColumnSpec[] = [
  { name: 'change_seq', kind: 'integer', nullable: false, description: 'The change_log seq of the latest change to the record.' },
  { name: 'change_op', kind: 'text', nullable: false, description: 'The latest change: upsert or delete.' },
]

/** The column in front of each row of an export over several accounts (export-accounts.ts), first in the key too. */
export const ACCOUNT_COLUMN: ColumnSpec = {
  name: 'account_id',
  kind: 'text',
  nullable: false,
  description: "The id of the account the row is from (the config file's accounts list).",
}

/** A value typed by its kind; `json` keeps the text it was read from beside the parsed value. */
export type Typed =
  | { kind: 'text'; value: string }
  | { kind: 'time'; value: string; micros: bigint }
  | { kind: 'real'; value: number }
  | { kind: 'integer'; value: bigint }
  | { kind: 'flag'; value: boolean }
  | { kind: 'json'; value: string }
  | { kind: 'bytes'; value: Buffer }
  | null

/** Counts values that did not fit their column's kind (and were written as NULL), with the first one. */
export interface Coercions {
  count: number
  example?: string
}

/** A misfit as a short, printable example (a long text is cut). */
function exampleOf(cell: SqlCell): string {
  if (typeof cell === 'string') return JSON.stringify(cell.length > 40 ? `${cell.slice(0, 39)}…` : cell)
  if (Buffer.isBuffer(cell)) return `<${cell.length} bytes>`
  return String(cell)
}

export function typed(kind: ColumnKind, cell: SqlCell, coerced: Coercions): Typed {
  if (cell === null) return null
  const miss = (): null => {
    coerced.count++
    coerced.example ??= exampleOf(cell)
    return null
  }
  switch (kind) {
    case 'text':
      if (typeof cell === 'string') return { kind, value: cell }
      if (typeof cell === 'number' || typeof cell === 'bigint') return { kind, value: String(cell) }
      return { kind, value: cell.toString('utf8') }
    case 'time': {
      if (typeof cell !== 'string') return miss()
      if (cell === '') return null
      let value: string | null
      try {
        value = canonicalTime(cell)
      } catch {
        return miss()
      }
      if (value === null) return miss()
      return { kind, value, micros: BigInt(parseInstant(value)) * 1000n }
    }
    case 'real':
      if (typeof cell === 'number') return { kind, value: cell }
      if (typeof cell === 'bigint') return { kind, value: Number(cell) }
      return miss()
    case 'integer':
      if (typeof cell === 'bigint') return { kind, value: cell }
      if (typeof cell === 'number' && Number.isInteger(cell)) return { kind, value: BigInt(cell) }
      return miss()
    case 'flag':
      if (cell === 0n || cell === 0) return { kind, value: false }
      if (cell === 1n || cell === 1) return { kind, value: true }
      return miss()
    case 'json': {
      // A number a view reads with json_extract is JSON text as it is.
      const text = typeof cell === 'string' ? cell : typeof cell === 'number' || typeof cell === 'bigint' ? String(cell) : undefined
      if (text === undefined) return miss()
      try {
        JSON.parse(text)
      } catch {
        return miss()
      }
      // One line per value: a JSON text spread over lines is written compact.
      return { kind, value: /[\r\n]/.test(text) ? JSON.stringify(JSON.parse(text)) : text }
    }
    case 'bytes':
      if (Buffer.isBuffer(cell)) return { kind, value: cell }
      return { kind, value: Buffer.from(String(cell), 'utf8') }
  }
}
