// How a value is written as text: the one rule of `fsm-sync export` (CSV, JSON Lines) and
// `fsm-sync query` (csv, json, table), so the same column reads the same from either. CSV is
// RFC 4180: a header line, CRLF after every record (what the RFC, spreadsheets and warehouse
// loaders expect), a field quoted when it holds a comma, a quote, CR or LF, quotes doubled; NULL is
// an empty field and an empty string a quoted one (`""`), so a loader reading empty fields as NULL
// keeps the two apart. In JSON a JSON column is its value (an object, an array), not a string
// holding its text: a reader gets the structure the column describes without a second parse.
// Times are canonical ISO-8601 UTC text, flags true/false, bytes base64.
import type { Typed } from './values.js'

export const CSV_LINE_END = '\r\n'

const NEEDS_QUOTES = /[",\r\n]/

export function csvField(text: string): string {
  return text === '' || NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/** One CSV record, its line end included. */
export function csvRecord(fields: readonly string[]): string {
  return fields.join(',') + CSV_LINE_END
}

/** A value's text without quoting: a CSV field's content, and what the query's table shows. */
export function plainText(v: Typed): string {
  if (v === null) return ''
  switch (v.kind) {
    case 'text':
    case 'time':
    case 'json':
      return v.value
    case 'real':
    case 'integer':
    case 'flag':
      return String(v.value)
    case 'bytes':
      return v.value.toString('base64')
  }
}

export function csvValue(v: Typed): string {
  if (v === null) return ''
  switch (v.kind) {
    case 'real':
    case 'integer':
    case 'flag':
      return String(v.value)
    default:
      return csvField(plainText(v))
  }
}

/** The value as JSON text. */
export function jsonValue(v: Typed): string {
  if (v === null) return 'null'
  switch (v.kind) {
    case 'text':
    case 'time':
      return JSON.stringify(v.value)
    case 'real':
      // JSON has no NaN or Infinity; a STRICT REAL column holds neither, a view might.
      return Number.isFinite(v.value) ? String(v.value) : 'null'
    case 'integer':
    case 'flag':
      return String(v.value)
    case 'json':
      return v.value
    case 'bytes':
      return JSON.stringify(v.value.toString('base64'))
  }
}

/** A value whose column has no declared kind (an expression in a query): typed by what SQLite gave. */
export function untyped(cell: unknown): Typed {
  if (cell === null || cell === undefined) return null
  if (typeof cell === 'string') return { kind: 'text', value: cell }
  if (typeof cell === 'number') return { kind: 'real', value: cell }
  if (typeof cell === 'bigint') return { kind: 'integer', value: cell }
  if (typeof cell === 'boolean') return { kind: 'flag', value: cell }
  if (Buffer.isBuffer(cell)) return { kind: 'bytes', value: cell }
  return { kind: 'text', value: JSON.stringify(cell) }
}
