// The output formats of `fsm-sync query`, as generators over a row iterator: each row becomes text
// as it is read and is dropped once written, so a result of any size takes constant memory.
import type { QueryRows } from './read-only-query.js'

export type QueryFormat = 'table' | 'json' | 'csv'

/** Rows the table format reads before fixing its column widths; a later, wider value runs over. */
export const TABLE_WIDTH_SAMPLE = 1000
/** Widest column of the table format; longer values are cut with "…". */
export const TABLE_MAX_WIDTH = 60

export function formatRows(result: QueryRows, format: QueryFormat): Generator<string> {
  switch (format) {
    case 'json':
      return json(result)
    case 'csv':
      return csv(result)
    case 'table':
      return table(result)
  }
}

function cellText(v: unknown): string {
  if (v === null || v === undefined) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v)
  if (Buffer.isBuffer(v)) return `<${v.length} bytes>`
  return JSON.stringify(v)
}

// One JSON document: the array is opened, one object per line, then closed.
function* json({ columns, rows }: QueryRows): Generator<string> {
  let first = true
  yield '['
  for (const r of rows) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(Object.fromEntries(columns.map((c, i) => [c, r[i] ?? null])))}`
    first = false
  }
  yield first ? ']\n' : '\n]\n'
}

function csvCell(v: unknown): string {
  const s = cellText(v)
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

function* csv({ columns, rows }: QueryRows): Generator<string> {
  yield `${columns.map(csvCell).join(',')}\n`
  for (const r of rows) yield `${r.map(csvCell).join(',')}\n`
}

function* table({ columns, rows }: QueryRows): Generator<string> {
  const fit = (s: string, w: number) => (s.length > TABLE_MAX_WIDTH ? `${s.slice(0, TABLE_MAX_WIDTH - 1)}…` : s.padEnd(w))
  const line = (r: readonly string[], widths: readonly number[]) =>
    `${r
      .map((s, i) => fit(s, widths[i] ?? 0))
      .join('  ')
      .trimEnd()}\n`
  const cells = (r: readonly unknown[]) => r.map((v) => cellText(v).replace(/\s+/g, ' '))
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
