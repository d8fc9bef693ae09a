// One read-only statement against the mirror (`fsm-sync query`). The connection is opened
// read-only with query_only set, and a statement SQLite does not report as read-only is refused
// before it runs, so a write can neither run nor be attempted.
import type { Sqlite } from './mirror-database.js'

export class QueryRefusedError extends Error {
  readonly code = 'QUERY_REFUSED' as const
}

/** The table column a result column reads as it is (through a view too), or null for an expression. */
export interface ColumnOrigin {
  table: string
  column: string
}

/** A statement's columns and its rows as an iterator: read once, row by row, never all held. */
export interface QueryRows {
  columns: string[]
  origins: (ColumnOrigin | null)[]
  rows: Iterable<unknown[]>
}

export interface QueryResult {
  columns: string[]
  origins: (ColumnOrigin | null)[]
  rows: unknown[][]
}

/** Values bound to the statement's parameters: `?` in order, and `:name` (or `@name`, `$name`) by name. */
export interface QueryParams {
  positional: readonly unknown[]
  named: Readonly<Record<string, unknown>>
}

/** The names of the statement's named parameters (`:name`, `@name`, `$name`), outside literals and comments. */
export function namedParameters(text: string): Set<string> {
  const code = stripComments(text).replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]/g, ' ')
  return new Set([...code.matchAll(/[:@$]([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))
}

/** Compiles and checks the statement; its rows are read as the caller iterates them. */
export function openReadOnlyQuery(sqlite: Sqlite, text: string, params?: QueryParams): QueryRows {
  let stmt
  try {
    stmt = sqlite.prepare(text)
  } catch (err) {
    throw new QueryRefusedError(`the statement does not compile: ${(err as Error).message}`, { cause: err })
  }
  // SQLite counts ATTACH and DETACH as read-only, yet ATTACH creates files: refuse them by name.
  if (!stmt.readonly || /^\s*(ATTACH|DETACH|VACUUM)\b/i.test(stripComments(text)))
    throw new QueryRefusedError('only read-only statements are allowed: the mirror is written by fsm-sync alone')
  if (!stmt.reader) return { columns: [], origins: [], rows: [] }
  const bind: unknown[] = [...(params?.positional ?? [])]
  if (params !== undefined && Object.keys(params.named).length > 0) bind.push(params.named)
  let rows
  try {
    rows = stmt.raw(true).iterate(...bind) as IterableIterator<unknown[]>
  } catch (err) {
    // better-sqlite3 checks the values against the parameters when the statement is bound.
    if (!(err instanceof RangeError || err instanceof TypeError)) throw err
    throw new QueryRefusedError(
      `the statement's parameters do not match the values given (${err.message}): pass one --param VALUE per ? in order, and --param name=VALUE per :name`,
      { cause: err },
    )
  }
  const columns = stmt.columns()
  return {
    columns: columns.map((c) => c.name),
    origins: columns.map((c) => (c.table === null || c.column === null ? null : { table: c.table, column: c.column })),
    rows,
  }
}

/** The whole result in memory: for small, known-size results (the demo's examples). */
export function runReadOnlyQuery(sqlite: Sqlite, text: string): QueryResult {
  const { rows, ...columns } = openReadOnlyQuery(sqlite, text)
  return { ...columns, rows: [...rows] }
}

function stripComments(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, ' ')
}
