// One read-only statement against the mirror (`fsm-sync query`). The connection is opened
// read-only with query_only set, and a statement SQLite does not report as read-only is refused
// before it runs, so a write can neither run nor be attempted.
import type { Sqlite } from './mirror-database.js'

export class QueryRefusedError extends Error {
  readonly code = 'QUERY_REFUSED' as const
}

export interface QueryResult {
  columns: string[]
  rows: unknown[][]
}

export function runReadOnlyQuery(sqlite: Sqlite, text: string): QueryResult {
  let stmt
  try {
    stmt = sqlite.prepare(text)
  } catch (err) {
    throw new QueryRefusedError(`the statement does not compile: ${(err as Error).message}`, { cause: err })
  }
  // SQLite counts ATTACH and DETACH as read-only, yet ATTACH creates files: refuse them by name.
  if (!stmt.readonly || /^\s*(ATTACH|DETACH|VACUUM)\b/i.test(stripComments(text))) throw new QueryRefusedError('only read-only statements are allowed: the mirror is written by fsm-sync alone')
  if (!stmt.reader) return { columns: [], rows: [] }
  const columns = stmt.columns().map((c) => c.name)
  const rows = stmt.raw(true).all() as unknown[][]
  return { columns, rows }
}

function stripComments(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ' ')
}

export function formatQueryResult(result: QueryResult, format: 'table' | 'json' | 'csv'): string {
  switch (format) {
    case 'json':
      return JSON.stringify(result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i] ?? null])))) + '\n'
    case 'csv':
      return [result.columns, ...result.rows].map((r) => r.map(csvCell).join(',')).join('\n') + '\n'
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

function csvCell(v: unknown): string {
  const s = cellText(v)
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

function table(result: QueryResult): string {
  const cells = result.rows.map((r) => r.map((v) => cellText(v).replace(/\s+/g, ' ')))
  const widths = result.columns.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length))))
  const fit = (s: string, w: number) => (s.length > w ? `${s.slice(0, w - 1)}…` : s.padEnd(w))
  const line = (r: string[]) => r.map((s, i) => fit(s, widths[i] ?? 0)).join('  ').trimEnd()
  const out = [line(result.columns), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)]
  out.push(`(${result.rows.length} row${result.rows.length === 1 ? '' : 's'})`)
  return out.join('\n') + '\n'
}
