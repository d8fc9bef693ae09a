// How a mirror column becomes a Postgres column (docs/postgres.md: the type mapping):
// the type each column kind is declared with, and a mirror value in the two forms the replicator
// sends: a JSON value for jsonb_populate_recordset (changes) and a field of COPY's text format
// (initial loads). Pure.
import type { SqlCell } from '../model/rows.js'
import { quoteIdentifier } from '../model/sql-names.js'
import type { ColumnKind, ColumnSpec } from '../model/table-spec.js'
import { isInstant } from '../model/timestamps.js'

export type PgType = 'text' | 'timestamptz' | 'double precision' | 'bigint' | 'boolean' | 'jsonb' | 'bytea'

export function pgType(kind: ColumnKind): PgType {
  switch (kind) {
    case 'text':
      return 'text'
    case 'time':
      return 'timestamptz'
    case 'real':
      return 'double precision'
    case 'integer':
      return 'bigint'
    case 'flag':
      return 'boolean'
    case 'json':
      return 'jsonb'
    case 'bytes':
      return 'bytea'
  }
}

/** The names information_schema.columns.data_type gives for each type, to check an existing table. */
export const INFORMATION_SCHEMA_TYPE: Readonly<Record<PgType, string>> = {
  text: 'text',
  timestamptz: 'timestamp with time zone',
  'double precision': 'double precision',
  bigint: 'bigint',
  boolean: 'boolean',
  jsonb: 'jsonb',
  bytea: 'bytea',
}

/**
 * The mirror's canonical instant text, or null for anything else (isInstant, the model's rule): a
 * `time` column may hold a value upstream sent that is not an instant (the row's raw keeps it), or
 * one timestamptz cannot hold (year 0000), and either is NULL in the replica rather than a failure.
 */
export function instantOrNull(value: unknown): string | null {
  return isInstant(value) ? value : null
}

/** Called for each time value written as NULL because it is not an instant ('' is no value: not counted). */
export type OnNotInstant = () => void

function timeOrNull(value: SqlCell | undefined, onNotInstant: OnNotInstant | undefined): string | null {
  const instant = instantOrNull(value)
  if (instant === null && value !== '' && value !== null && value !== undefined) onNotInstant?.()
  return instant
}

/** A mirror value as a JSON value for jsonb_populate_recordset: Postgres casts it to the column's type. */
export function jsonValue(kind: ColumnKind, value: SqlCell | undefined, onNotInstant?: OnNotInstant): unknown {
  if (value === null || value === undefined) return null
  switch (kind) {
    case 'text':
      return typeof value === 'string' ? forPostgres(value) : Buffer.isBuffer(value) ? value.toString('utf8') : String(value)
    case 'time':
      return timeOrNull(value, onNotInstant)
    case 'real':
    case 'integer':
      return typeof value === 'bigint' ? value.toString() : value
    case 'flag':
      return value !== 0 && value !== 0n && value !== '0'
    case 'json':
      return parseJson(value)
    case 'bytes':
      return `\\x${Buffer.isBuffer(value) ? value.toString('hex') : Buffer.from(typeof value === 'string' ? value : String(value)).toString('hex')}`
  }
}

/**
 * JSON text as a value. Text that is not JSON (the mirror writes only JSON to these columns, so
 * this is a safeguard) is kept as a JSON string rather than failing the batch.
 */
function parseJson(value: SqlCell | undefined): unknown {
  if (typeof value !== 'string') return typeof value === 'bigint' ? value.toString() : value
  try {
    return JSON.parse(jsonForJsonb(value)) as unknown
  } catch {
    return forPostgres(value)
  }
}

/** A JSON escape: a surrogate pair, a lone surrogate or NUL (group 1), or any other (an escaped backslash included). */
const JSON_ESCAPE = /\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u([dD][89a-fA-F][0-9a-fA-F]{2}|0000)|\\[^]/g

/**
 * JSON text as jsonb takes it. jsonb refuses the escape `\u0000` (and text cannot hold NUL): it is
 * dropped, as from text columns. It refuses an escaped UTF-16 surrogate without its pair (JSON.stringify
 * writes one for an emoji cut in half): that becomes `\ufffd`, the replacement character. Escapes are
 * read left to right, so `\\u0000` (an escaped backslash, then `u0000`) is left alone.
 */
export function jsonForJsonb(text: string): string {
  const escaped = text.includes('\\u')
    ? text.replace(JSON_ESCAPE, (m, lone?: string) => (lone === undefined ? m : lone === '0000' ? '' : '\\ufffd'))
    : text
  return forPostgres(escaped)
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * Text as Postgres takes it. It cannot hold NUL, which SQLite text can: NUL is dropped (raw keeps the
 * value in the mirror). A UTF-16 surrogate without its pair, which UTF-8 cannot encode (and JSON.stringify
 * would write as an escape jsonb refuses), becomes U+FFFD.
 */
function forPostgres(text: string): string {
  const withoutNul = text.includes('\0') ? text.replaceAll('\0', '') : text
  return withoutNul.replace(LONE_SURROGATE, '\uFFFD')
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\0': '' }
const NEEDS_ESCAPE = /[\\\n\r\t\0]/
const ESCAPE_ALL = /[\\\n\r\t\0]/g

function copyText(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(ESCAPE_ALL, (c) => COPY_ESCAPES[c]!) : text
}

/** A mirror value as one field of COPY's text format (`\N` for NULL). */
export function copyField(kind: ColumnKind, value: SqlCell | undefined, onNotInstant?: OnNotInstant): string {
  if (value === null || value === undefined) return '\\N'
  switch (kind) {
    case 'text':
      return copyText(forPostgres(typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('utf8') : String(value)))
    case 'json':
      // JSON text goes as it is (jsonb parses it), without the escapes jsonb refuses.
      return copyText(jsonForJsonb(typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('utf8') : String(value)))
    case 'time':
      return timeOrNull(value, onNotInstant) ?? '\\N'
    case 'real':
    case 'integer':
      return typeof value === 'number' || typeof value === 'bigint' ? String(value) : '\\N'
    case 'flag':
      return value !== 0 && value !== 0n && value !== '0' ? 't' : 'f'
    case 'bytes':
      return `\\\\x${Buffer.isBuffer(value) ? value.toString('hex') : Buffer.from(typeof value === 'string' ? value : String(value)).toString('hex')}`
  }
}

/** A function turning one mirror row (its values in column order) into one line of COPY text. */
export function copyLineEncoder(
  columns: readonly ColumnSpec[],
  onNotInstant?: OnNotInstant,
): (values: readonly (SqlCell | undefined)[]) => string {
  const kinds = columns.map((c) => c.kind)
  return (values) => {
    let line = ''
    for (let i = 0; i < kinds.length; i++) {
      if (i > 0) line += '\t'
      line += copyField(kinds[i]!, values[i], onNotInstant)
    }
    return `${line}\n`
  }
}

/** COPY's text-format escapes of a text value, done by SQLite. */
const escaped = (x: string): string =>
  `replace(replace(replace(replace(${x}, '\\', '\\\\'), char(10), '\\n'), char(13), '\\r'), char(9), '\\t')`

/**
 * One column as a field of COPY's text format, computed by SQLite itself: for an initial load this
 * costs a fraction of encoding every value in JavaScript. The same rules as copyField: a time that
 * is not a canonical instant (a day that does not exist, year 0000 included: isInstant) is NULL, and
 * counted through registerCopyFunctions' onNotInstant; a real is written with 17 significant digits,
 * which reads back as the same double.
 */
function copyFieldSql(column: ColumnSpec): string {
  const x = quoteIdentifier(column.name)
  switch (column.kind) {
    case 'text':
      return `coalesce(${escaped(x)}, '\\N')`
    case 'json':
      // The rare value holding an escape jsonb refuses (NUL, a UTF-16 surrogate) goes through jsonForJsonb
      // (registerCopyFunctions); a surrogate pair (an escaped emoji) goes too, and is kept.
      return `coalesce(${escaped(`CASE WHEN instr(${x}, '\\u0000') > 0 OR ${x} GLOB '*\\u[dD][89a-fA-F]*' THEN ${JSON_FUNCTION}(${x}) ELSE ${x} END`)}, '\\N')`
    case 'time':
      return `CASE WHEN strftime('%Y-%m-%dT%H:%M:%fZ', ${x}) = ${x} AND ${x} GLOB '[0-9][0-9][0-9][0-9]-*' AND ${x} >= '0001' THEN ${x} WHEN ${x} IS NULL OR ${x} = '' THEN '\\N' ELSE ${NOT_INSTANT_FUNCTION}() END`
    case 'real':
      return `CASE WHEN typeof(${x}) IN ('real', 'integer') THEN printf('%!.17g', ${x}) ELSE '\\N' END`
    case 'integer':
      return `CASE WHEN typeof(${x}) = 'integer' THEN CAST(${x} AS TEXT) ELSE '\\N' END`
    case 'flag':
      return `CASE WHEN ${x} IS NULL THEN '\\N' WHEN ${x} THEN 't' ELSE 'f' END`
    case 'bytes':
      return `CASE WHEN ${x} IS NULL THEN '\\N' ELSE '\\\\x' || lower(hex(${x})) END`
  }
}

const JSON_FUNCTION = 'fsm_json_for_jsonb'
const NOT_INSTANT_FUNCTION = 'fsm_not_instant'

/**
 * Registers the functions copyLineSql's expressions call on a SQLite connection (once per
 * connection); onNotInstant is called for each time value a load writes as NULL.
 */
export function registerCopyFunctions(
  db: { function(name: string, options: { deterministic: boolean }, fn: (...args: string[]) => string): unknown },
  onNotInstant?: OnNotInstant,
): void {
  db.function(JSON_FUNCTION, { deterministic: true }, (text: string) => jsonForJsonb(text))
  db.function(NOT_INSTANT_FUNCTION, { deterministic: false }, () => {
    onNotInstant?.()
    return '\\N'
  })
}

/** A SQLite expression giving a row's line of COPY text (newline included); see registerCopyFunctions. */
export function copyLineSql(columns: readonly ColumnSpec[]): string {
  return `${columns.map(copyFieldSql).join(` || char(9) || `)} || char(10)`
}
