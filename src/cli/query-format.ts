// The output formats of `fsm-sync query`, as generators over a row iterator: each row becomes text
// as it is read and is dropped once written, so a result of any size takes constant memory. A value
// is written by the rule of `fsm-sync export` (src/export/encoding.ts): a column that reads a
// declared column as it is takes that column's kind (a JSON column is a JSON value in `json`, a flag
// true/false), and a value that does not fit its kind, or of an expression, is shown as SQLite gives it.
import { catalogTables } from '../catalog/catalog.js'
import { csvField, csvRecord, csvValue, jsonValue, plainText, untyped } from '../export/encoding.js'
import { typed, type Coercions, type Typed } from '../export/values.js'
import type { SqlCell } from '../model/rows.js'
import type { ColumnKind } from '../model/table-spec.js'
import type { ColumnOrigin, QueryResult, QueryRows } from '../store/sqlite/read-only-query.js'

export type QueryFormat = 'table' | 'json' | 'csv'

/** Rows the table format reads before fixing its column widths; a later, wider value runs over. */
export const TABLE_WIDTH_SAMPLE = 1000
/** Widest column of the table format; longer values are cut with "…". */
export const TABLE_MAX_WIDTH = 60

/** The kind of each result column that reads a declared column as it is; undefined for the others. */
export function columnKinds(origins: readonly (ColumnOrigin | null)[]): (ColumnKind | undefined)[] {
  const kinds = new Map(catalogTables().flatMap((t) => t.columns.map((c) => [`${t.name}\0${c.name}`, c.kind] as const)))
  return origins.map((o) => (o === null ? undefined : kinds.get(`${o.table}\0${o.column}`)))
}

const ignored: Coercions = { count: 0 }

/** A cell typed by its column's kind when it fits it, else as SQLite gave it. */
function cellValue(kind: ColumnKind | undefined, cell: unknown): Typed {
  if (kind === undefined || cell === null || cell === undefined) return untyped(cell)
  return typed(kind, cell as SqlCell, ignored) ?? untyped(cell)
}

function typedRows(result: QueryRows): Iterable<Typed[]> {
  const kinds = columnKinds(result.origins)
  return {
    *[Symbol.iterator]() {
      for (const r of result.rows) yield r.map((cell, i) => cellValue(kinds[i], cell))
    },
  }
}

export function formatRows(result: QueryRows, format: QueryFormat): Generator<string> {
  const rows = typedRows(result)
  switch (format) {
    case 'json':
      return json(result.columns, rows)
    case 'csv':
      return csv(result.columns, rows)
    case 'table':
      return table(result.columns, rows)
  }
}

/** The whole of a small result in memory as text (the demo's examples). */
export function formatQueryResult(result: QueryResult, format: QueryFormat): string {
  return [...formatRows(result, format)].join('')
}

// One JSON document: the array is opened, one object per line, then closed.
function* json(columns: readonly string[], rows: Iterable<Typed[]>): Generator<string> {
  const keys = columns.map((c) => JSON.stringify(c) + ':')
  let first = true
  yield '['
  for (const r of rows) {
    yield `${first ? '\n' : ',\n'}{${keys.map((k, i) => k + jsonValue(r[i] ?? null)).join(',')}}`
    first = false
  }
  yield first ? ']\n' : '\n]\n'
}

function* csv(columns: readonly string[], rows: Iterable<Typed[]>): Generator<string> {
  yield csvRecord(columns.map(csvField))
  for (const r of rows) yield csvRecord(r.map(csvValue))
}

function* table(columns: readonly string[], rows: Iterable<Typed[]>): Generator<string> {
  const fit = (s: string, w: number) => (s.length > TABLE_MAX_WIDTH ? `${s.slice(0, TABLE_MAX_WIDTH - 1)}…` : s.padEnd(w))
  const line = (r: readonly string[], widths: readonly number[]) =>
    `${r
      .map((s, i) => fit(s, widths[i] ?? 0))
      .join('  ')
      .trimEnd()}\n`
  const cells = (r: readonly Typed[]) => r.map((v) => plainText(v).replace(/\s+/g, ' '))
  // Widths come from the header and the first rows only: measuring every row would hold them all.
  const sample: string[][] = []
  let widths: number[] | undefined
  const head = function* (): Generator<string> {
    widths = columns.map((c, i) => {
      let w = c.length
      for (const r of sample) w = Math.max(w, (r[i] ?? '').length)
      return Math.min(TABLE_MAX_WIDTH, w)
    })
    yield line(columns, widths)
    yield `${widths.map((w) => '-'.repeat(w)).join('  ')}\n`
    for (const r of sample) yield line(r, widths)
    sample.length = 0
  }
  let count = 0
  for (const r of rows) {
    count++
    if (widths !== undefined) {
      yield line(cells(r), widths)
      continue
    }
    sample.push(cells(r))
    if (sample.length >= TABLE_WIDTH_SAMPLE) yield* head()
  }
  if (widths === undefined) yield* head()
  yield `(${count} row${count === 1 ? '' : 's'})\n`
}
