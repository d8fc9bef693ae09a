// `fsm-sync export`: a consistent snapshot of the mirror as files a warehouse load job reads, one per
// table, plus manifest.json. Everything is read in one read transaction on a read-only connection
// (WAL: the daemon keeps writing meanwhile, and the files show the mirror at one change_log seq).
// Column types follow the TableSpecs (docs/tables.md). With `afterSeq`, each file holds the rows
// changed after that seq instead: the latest change per record (`change_seq`, `change_op`) and the
// row as it is at the snapshot; a deleted record's row carries its deleted_at. A child table's file
// holds the current child rows of every changed parent: a loader replaces the children of each
// parent id in the parent's file with them.
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { ColumnSpec, TableSpec } from '../model/table-spec.js'
import type { Sqlite } from '../store/mirror-database.js'
import { duckdbType, ParquetWriters } from './parquet-writer.js'
import { csvWriter, jsonlWriter, type RowWriter } from './text-writers.js'
import { nullableWhenExported, typed, type Coercions, type SqliteCell, type Typed } from './values.js'

export const EXPORT_FORMATS = ['parquet', 'csv', 'jsonl'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export const MANIFEST_FILE = 'manifest.json'

export interface ExportOptions {
  format: ExportFormat
  outDir: string
  /** Tables to write; by default every data table (with afterSeq: every one changed, and its children). */
  tables?: readonly string[] | undefined
  /** Write the changes after this change_log seq instead of whole tables. */
  afterSeq?: number | undefined
  /** Time of the export, for the manifest. */
  now: number
  /**
   * Mode of every file written: the files hold the mirror's data, so the CLI gives them the
   * mirror's own mode (FSM_DB_MODE, 0640 by default: no access for others). 0640 when not given.
   */
  fileMode?: number | undefined
  /** Told after each file is complete, before the next table is read (progress; the snapshot holds). */
  onTable?: ((table: ExportedTable) => void | Promise<void>) | undefined
}

export interface ExportedTable {
  name: string
  file: string
  rows: number
  /** Values that did not fit their column's type and were written as NULL (values.ts). */
  nulledValues: number
  primaryKey: readonly string[]
  columns: { name: string; kind: ColumnSpec['kind']; type: string; nullable: boolean }[]
}

export interface ExportManifest {
  format: ExportFormat
  exportedAt: string
  /** The change_log seq the snapshot is at: the next incremental export starts after it. */
  seq: number
  /** With --after-seq: the changes in (afterSeq, seq]. */
  afterSeq: number | null
  tables: ExportedTable[]
}

/** A selection or request the mirror cannot answer (exit 2 in the CLI: the command line was wrong). */
export class ExportUsageError extends Error {}

const EXTENSIONS: Readonly<Record<ExportFormat, string>> = { parquet: 'parquet', csv: 'csv', jsonl: 'jsonl' }

const CHANGE_COLUMNS: readonly ColumnSpec[] = [
  { name: 'change_seq', kind: 'integer', nullable: false, description: 'The change_log seq of the latest change to the record.' },
  { name: 'change_op', kind: 'text', nullable: false, description: 'The latest change: upsert or delete.' },
]

const q = (name: string) => `"${name.replace(/"/g, '""')}"`

interface Plan {
  table: TableSpec
  columns: readonly ColumnSpec[]
  sql: string
  params: (string | number)[]
}

/** Writes the files and the manifest (last, so a reader that finds it finds every file). */
export async function exportMirror(sqlite: Sqlite, catalog: readonly TableSpec[], options: ExportOptions): Promise<ExportManifest> {
  const mode = options.fileMode ?? 0o640
  mkdirSync(options.outDir, { recursive: true })
  // A manifest left by an earlier export into this folder would vouch for files being replaced.
  const manifestFile = path.join(options.outDir, MANIFEST_FILE)
  rmSync(manifestFile, { force: true })
  const parquet = options.format === 'parquet' ? await ParquetWriters.open() : undefined
  const written: string[] = []
  let reading = false
  try {
    // One read transaction: the first read fixes the snapshot every later read sees.
    sqlite.exec('BEGIN')
    reading = true
    const seq = Number(sqlite.prepare(`SELECT coalesce(max(seq), 0) FROM change_log`).pluck().get())
    const afterSeq = options.afterSeq ?? null
    if (afterSeq !== null && afterSeq > seq)
      throw new ExportUsageError(`--after-seq ${afterSeq} is past the mirror's last change (seq ${seq}): nothing can follow it yet`)
    const plans = plan(sqlite, catalog, options, seq)
    const tables: ExportedTable[] = []
    for (const p of plans) {
      const file = `${p.table.name}.${EXTENSIONS[options.format]}`
      const target = path.join(options.outDir, file)
      const partial = `${target}.partial`
      written.push(partial)
      const writer: RowWriter =
        parquet !== undefined
          ? await parquet.writer(partial, p.columns)
          : options.format === 'csv'
            ? csvWriter(partial, p.columns, mode)
            : jsonlWriter(partial, p.columns, mode)
      const coerced: Coercions = { count: 0 }
      const kinds = p.columns.map((c) => c.kind)
      let rows = 0
      const values: Typed[] = new Array<Typed>(kinds.length)
      for (const cells of sqlite
        .prepare(p.sql)
        .raw(true)
        .safeIntegers(true)
        .iterate(...p.params) as Iterable<SqliteCell[]>) {
        for (let i = 0; i < kinds.length; i++) values[i] = typed(kinds[i]!, cells[i] ?? null, coerced)
        writer.row(values)
        rows++
      }
      await writer.close()
      chmodSync(partial, mode)
      renameSync(partial, target)
      const exported: ExportedTable = {
        name: p.table.name,
        file,
        rows,
        nulledValues: coerced.count,
        primaryKey: p.table.primaryKey,
        columns: p.columns.map((c) => ({ name: c.name, kind: c.kind, type: duckdbType(c.kind), nullable: nullableWhenExported(c) })),
      }
      tables.push(exported)
      await options.onTable?.(exported)
    }
    const manifest: ExportManifest = { format: options.format, exportedAt: new Date(options.now).toISOString(), seq, afterSeq, tables }
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n', { mode })
    chmodSync(manifestFile, mode)
    return manifest
  } catch (err) {
    for (const f of written) rmSync(f, { force: true })
    throw err
  } finally {
    if (reading) sqlite.exec('COMMIT')
    parquet?.close()
  }
}

function plan(sqlite: Sqlite, catalog: readonly TableSpec[], options: ExportOptions, seq: number): Plan[] {
  const objects = new Map(
    (sqlite.prepare(`SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')`).all() as { name: string; type: string }[]).map(
      (o) => [o.name, o.type],
    ),
  )
  const byName = new Map(catalog.map((t) => [t.name, t]))
  const afterSeq = options.afterSeq
  let selected: TableSpec[]
  if (options.tables !== undefined) {
    const unknown = options.tables.filter((n) => !byName.has(n))
    if (unknown.length > 0)
      throw new ExportUsageError(`--tables: no such table: ${unknown.join(', ')}; valid: ${catalog.map((t) => t.name).join(', ')}`)
    selected = [...new Set(options.tables)].map((n) => byName.get(n)!)
  } else if (afterSeq === undefined) {
    selected = catalog.filter((t) => t.role === 'data' && objects.has(t.name))
  } else {
    const changed = new Set(
      sqlite.prepare(`SELECT DISTINCT table_name FROM change_log WHERE seq > ? AND seq <= ?`).pluck().all(afterSeq, seq) as string[],
    )
    selected = catalog.filter(
      (t) => objects.has(t.name) && (changed.has(t.name) || (t.parent !== undefined && changed.has(t.parent.table))),
    )
  }
  for (const t of selected) checkColumns(sqlite, t, objects.get(t.name))
  if (afterSeq === undefined) {
    return selected.map((table) => ({
      table,
      columns: table.columns,
      // By key, or by every column for a table or view without one: the same mirror gives the same files.
      sql: `SELECT ${table.columns.map((c) => q(c.name)).join(', ')} FROM ${q(table.name)}${orderBy('', table.primaryKey.length > 0 ? table.primaryKey : table.columns.map((c) => c.name))}`,
      params: [],
    }))
  }
  return selected.map((table) => {
    if (objects.get(table.name) === 'view' || table.role !== 'data')
      throw new ExportUsageError(
        `--after-seq: changes are recorded for data tables only, not for ${table.name} (${objects.get(table.name) === 'view' ? 'a view' : 'the daemon\u2019s own state'}); export it whole without --after-seq`,
      )
    const owner = table.parent?.table ?? table.name
    const ownerSpec = byName.get(owner)
    const ownerKey = ownerSpec?.primaryKey ?? table.primaryKey
    const match =
      table.parent !== undefined
        ? `t.${q(table.parent.column)} = c.record_id`
        : ownerKey.length === 1
          ? `t.${q(ownerKey[0]!)} = c.record_id`
          : `(${ownerKey.map((k) => `t.${q(k)}`).join(` || '/' || `)}) = c.record_id`
    const sql =
      `SELECT c.seq, l.op, ${table.columns.map((c) => `t.${q(c.name)}`).join(', ')}
       FROM (SELECT record_id, max(seq) AS seq FROM change_log WHERE table_name = ? AND seq > ? AND seq <= ? GROUP BY record_id) c
       JOIN change_log l ON l.seq = c.seq
       JOIN ${q(table.name)} t ON ${match}` + orderBy('t.', table.primaryKey, 'c.seq')
    return { table, columns: [...CHANGE_COLUMNS, ...table.columns], sql, params: [owner, afterSeq, seq] }
  })
}

function orderBy(prefix: string, key: readonly string[], first?: string): string {
  const terms = [...(first === undefined ? [] : [first]), ...key.map((k) => `${prefix}${q(k)}`)]
  return terms.length === 0 ? '' : ` ORDER BY ${terms.join(', ')}`
}

/** Every declared column must be in the mirror: a mirror older than the declarations says how to fix it. */
function checkColumns(sqlite: Sqlite, table: TableSpec, type: string | undefined): void {
  if (type === undefined)
    throw new ExportUsageError(
      `the mirror has no table ${table.name}: it was last migrated by an older fsm-sync; run \`fsm-sync sync\` once to bring it up to date`,
    )
  const present = new Set(sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table.name) as string[])
  const missing = table.columns.filter((c) => !present.has(c.name)).map((c) => c.name)
  if (missing.length > 0)
    throw new ExportUsageError(
      `the mirror's ${table.name} has no column ${missing.join(', ')}: it was last migrated by an older fsm-sync; run \`fsm-sync sync\` once to bring it up to date`,
    )
}
