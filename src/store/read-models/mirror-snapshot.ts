// Reads of the mirror as one consistent snapshot, for the readers that copy it elsewhere (`fsm-sync
// export`, the Postgres destination): a read transaction, the change_log seq it is at, the rows of a
// declared table (TableSpec) in key order, the rows of the records changed after a seq. The tables
// are the declared ones (docs/tables.md), named at run time, so these are raw prepared statements:
// each reads a whole table or a batch of changes, the hot path of both readers.
import type { SqlCell } from '../../model/rows.js'
import type { ColumnSpec, TableSpec } from '../../model/table-spec.js'
import { quoteIdentifier } from '../../model/sql-names.js'
import { changeKeySql } from '../../model/change-key.js'
import { lastChangeSeq } from '../repositories/change-log-consumers.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { mirrorQuery, rows } from '../sqlite/typed-query.js'

const columnList = (columns: readonly ColumnSpec[], prefix = '') => columns.map((c) => `${prefix}${quoteIdentifier(c.name)}`).join(', ')

function orderBy(prefix: string, key: readonly string[], first?: string): string {
  const terms = [...(first === undefined ? [] : [first]), ...key.map((k) => `${prefix}${quoteIdentifier(k)}`)]
  return terms.length === 0 ? '' : ` ORDER BY ${terms.join(', ')}`
}

/**
 * Runs `read` in one read transaction: its first read fixes the snapshot every later read sees (WAL:
 * writers go on meanwhile). On a connection of its own: the transaction stays open across awaits.
 */
export async function inReadSnapshot<T>(sqlite: Sqlite, read: () => Promise<T>): Promise<T> {
  sqlite.exec('BEGIN')
  try {
    return await read()
  } finally {
    if (sqlite.inTransaction) sqlite.exec('COMMIT')
  }
}

/** The change_log seq the snapshot is at (read inside inReadSnapshot, the snapshot starts here). */
export const snapshotSeq = lastChangeSeq

/** The mirror's tables and views by name. */
export function mirrorObjects(sqlite: Sqlite): Map<string, 'table' | 'view'> {
  // sqlite_master is SQLite's own catalog, outside the kysely schema.
  const found = sqlite.prepare(`SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')`).all() as {
    name: string
    type: 'table' | 'view'
  }[]
  return new Map(found.map((o) => [o.name, o.type]))
}

/** The columns a table or view of the mirror has. */
export function mirrorColumns(sqlite: Sqlite, table: string): Set<string> {
  // pragma_table_info is SQLite's own catalog, outside the kysely schema.
  return new Set(sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[])
}

/** The tables with a change in (afterSeq, seq]. */
export function tablesChangedBetween(sqlite: Sqlite, afterSeq: number, seq: number): Set<string> {
  const q = mirrorQuery.selectFrom('change_log').select('table_name').distinct().where('seq', '>', afterSeq).where('seq', '<=', seq)
  return new Set(rows(sqlite, q).map((r) => r.table_name))
}

export interface LoggedChange {
  seq: number
  table_name: string
  record_id: string
  op: 'upsert' | 'delete'
  updated_at: string | null
  changed_at: string
}

/** The next `limit` changes after `seq`, in order. */
export function changesAfter(sqlite: Sqlite, seq: number, limit: number): LoggedChange[] {
  // A batch of the destination's follow loop: the hot path, as a raw statement.
  return sqlite
    .prepare(`SELECT seq, table_name, record_id, op, updated_at, changed_at FROM change_log WHERE seq > ? ORDER BY seq LIMIT ?`)
    .all(seq, limit) as LoggedChange[]
}

export interface ReadOptions {
  /** Integers as bigint (every 64-bit value exact); numbers otherwise. */
  safeIntegers?: boolean
  /**
   * Rows by key (the default: the same mirror gives the same rows in the same order), or in the
   * table's storage order: a reader to whom the order does not matter (a bulk load) then reads a
   * table with a text key in one scan instead of through its key's index.
   */
  keyOrder?: boolean
}

function wholeTable(table: TableSpec, select: string, options: ReadOptions): string {
  if (options.keyOrder === false) return `SELECT ${select} FROM ${quoteIdentifier(table.name)}`
  // By key, or by every column for a table or view without one.
  const key = table.primaryKey.length > 0 ? table.primaryKey : table.columns.map((c) => c.name)
  return `SELECT ${select} FROM ${quoteIdentifier(table.name)}${orderBy('', key)}`
}

/** Every row of a declared table, its columns in declaration order (by key unless told otherwise). */
export function tableRows(sqlite: Sqlite, table: TableSpec, options: ReadOptions = {}): IterableIterator<SqlCell[]> {
  return sqlite
    .prepare(wholeTable(table, columnList(table.columns), options))
    .raw(true)
    .safeIntegers(options.safeIntegers ?? false)
    .iterate() as IterableIterator<SqlCell[]>
}

/**
 * Every row of a table as one text value SQLite computes with `line` (an expression over the
 * table's columns): a load encodes its rows in SQLite rather than in JavaScript.
 */
export function tableLines(sqlite: Sqlite, table: TableSpec, line: string, options: ReadOptions = {}): IterableIterator<string> {
  return sqlite
    .prepare(wholeTable(table, line, options))
    .pluck()
    .iterate() as IterableIterator<string>
}

/**
 * The records of `table` changed in (afterSeq, seq], one row each as it is in the snapshot: the
 * seq and op of its latest change, then the table's columns, by that seq and key. The changes are
 * logged under `owner` (the table itself, or its parent for a child table) whose key is `ownerKey`.
 */
export function changedRows(
  sqlite: Sqlite,
  table: TableSpec,
  owner: { name: string; primaryKey: readonly string[] },
  afterSeq: number,
  seq: number,
  options: ReadOptions = {},
): IterableIterator<SqlCell[]> {
  const ownerKey = owner.primaryKey.length > 0 ? owner.primaryKey : table.primaryKey
  const match =
    table.parent !== undefined
      ? `t.${quoteIdentifier(table.parent.column)} = c.record_id`
      : `(${changeKeySql(ownerKey, 't.')}) = c.record_id`
  const sql =
    `SELECT c.seq, l.op, ${columnList(table.columns, 't.')}
       FROM (SELECT record_id, max(seq) AS seq FROM change_log WHERE table_name = ? AND seq > ? AND seq <= ? GROUP BY record_id) c
       JOIN change_log l ON l.seq = c.seq
       JOIN ${quoteIdentifier(table.name)} t ON ${match}` + orderBy('t.', table.primaryKey, 'c.seq')
  return sqlite
    .prepare(sql)
    .raw(true)
    .safeIntegers(options.safeIntegers ?? false)
    .iterate(owner.name, afterSeq, seq) as IterableIterator<SqlCell[]>
}

/** Up to this many keys per statement (SQLite's host parameter limit is 32766). */
const CHUNK = 500

/** The rows of a table whose key is one of `keys` (each the key's values in primaryKey order). */
export function rowsWithKeys(sqlite: Sqlite, table: TableSpec, keys: readonly (readonly string[])[]): SqlCell[][] {
  const pk = table.primaryKey
  const out: SqlCell[][] = []
  for (let i = 0; i < keys.length; i += CHUNK) {
    const chunk = keys.slice(i, i + CHUNK)
    const where =
      pk.length === 1
        ? `${quoteIdentifier(pk[0]!)} IN (${chunk.map(() => '?').join(', ')})`
        : `(${pk.map(quoteIdentifier).join(', ')}) IN (VALUES ${chunk.map(() => `(${pk.map(() => '?').join(', ')})`).join(', ')})`
    const sql = `SELECT ${columnList(table.columns)} FROM ${quoteIdentifier(table.name)} WHERE ${where}`
    out.push(...(sqlite.prepare(sql).raw(true).all(chunk.flat()) as SqlCell[][]))
  }
  return out
}

/** The rows of a child table whose parent is one of `parentIds`. */
export function childRowsOf(sqlite: Sqlite, child: TableSpec, parentIds: readonly string[]): SqlCell[][] {
  if (child.parent === undefined) throw new Error(`${child.name} is not a child table`)
  const out: SqlCell[][] = []
  for (let i = 0; i < parentIds.length; i += CHUNK) {
    const chunk = parentIds.slice(i, i + CHUNK)
    const sql = `SELECT ${columnList(child.columns)} FROM ${quoteIdentifier(child.name)} WHERE ${quoteIdentifier(child.parent.column)} IN (${chunk.map(() => '?').join(', ')})`
    out.push(...(sqlite.prepare(sql).raw(true).all(chunk) as SqlCell[][]))
  }
  return out
}

/**
 * A fingerprint of a table's content computed in SQLite, one row of aggregates (the row count, the
 * newest value of each time column, per column the total length and, for numbers, the sum): a
 * reader compares it to decide whether to read the rows at all. A change that keeps every one of
 * these (a same-length edit of a text with no timestamp moving) goes unseen until the next one.
 */
export function tableFingerprint(sqlite: Sqlite, table: TableSpec): string {
  const terms = ['count(*)']
  for (const c of table.columns) {
    const col = quoteIdentifier(c.name)
    terms.push(`total(length(${col}))`)
    if (c.kind === 'time') terms.push(`max(${col})`)
    else if (c.kind === 'integer' || c.kind === 'real' || c.kind === 'flag') terms.push(`total(${col})`)
  }
  const row = sqlite
    .prepare(`SELECT ${terms.join(', ')} FROM ${quoteIdentifier(table.name)}`)
    .raw(true)
    .get() as unknown[]
  return JSON.stringify(row)
}

/** The rows of a table whose `column` is at or after `from` (a table's appendedBy column), in declaration order. */
export function rowsFrom(sqlite: Sqlite, table: TableSpec, column: string, from: string): SqlCell[][] {
  return sqlite
    .prepare(`SELECT ${columnList(table.columns)} FROM ${quoteIdentifier(table.name)} WHERE ${quoteIdentifier(column)} >= ?`)
    .raw(true)
    .all(from) as SqlCell[][]
}

/** The oldest and newest value of a column, and the row count: where an appended table starts and ends. */
export function columnRange(sqlite: Sqlite, table: TableSpec, column: string): { min: string | null; max: string | null; count: number } {
  return sqlite
    .prepare(
      `SELECT min(${quoteIdentifier(column)}) AS min, max(${quoteIdentifier(column)}) AS max, count(*) AS count FROM ${quoteIdentifier(table.name)}`,
    )
    .get() as {
    min: string | null
    max: string | null
    count: number
  }
}
