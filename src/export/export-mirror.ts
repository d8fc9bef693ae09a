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
import {
  changedRows,
  inReadSnapshot,
  mirrorColumns,
  mirrorObjects,
  snapshotSeq,
  tableRows,
  tablesChangedBetween,
} from '../store/mirror-snapshot.js'
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

interface Plan {
  table: TableSpec
  columns: readonly ColumnSpec[]
  /** The file's rows, read from the snapshot (the columns' values in order). */
  rows: () => Iterable<SqliteCell[]>
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
  try {
    // One read transaction: the first read fixes the snapshot every later read sees.
    return await inReadSnapshot(sqlite, async () => {
      const seq = snapshotSeq(sqlite)
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
        for (const cells of p.rows()) {
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
    })
  } catch (err) {
    for (const f of written) rmSync(f, { force: true })
    throw err
  } finally {
    parquet?.close()
  }
}

function plan(sqlite: Sqlite, catalog: readonly TableSpec[], options: ExportOptions, seq: number): Plan[] {
  const objects = mirrorObjects(sqlite)
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
    const changed = tablesChangedBetween(sqlite, afterSeq, seq)
    selected = catalog.filter(
      (t) => objects.has(t.name) && (changed.has(t.name) || (t.parent !== undefined && changed.has(t.parent.table))),
    )
  }
  for (const t of selected) checkColumns(sqlite, t, objects.get(t.name))
  if (afterSeq === undefined) {
    return selected.map((table) => ({
      table,
      columns: table.columns,
      // By key: the same mirror gives the same files.
      rows: () => tableRows(sqlite, table, { safeIntegers: true }),
    }))
  }
  return selected.map((table) => {
    if (objects.get(table.name) === 'view' || table.role !== 'data')
      throw new ExportUsageError(
        `--after-seq: changes are recorded for data tables only, not for ${table.name} (${objects.get(table.name) === 'view' ? 'a view' : 'the daemon\u2019s own state'}); export it whole without --after-seq`,
      )
    const owner = table.parent?.table ?? table.name
    const ownerKey = byName.get(owner)?.primaryKey ?? table.primaryKey
    return {
      table,
      columns: [...CHANGE_COLUMNS, ...table.columns],
      rows: () => changedRows(sqlite, table, { name: owner, primaryKey: ownerKey }, afterSeq, seq, { safeIntegers: true }),
    }
  })
}

/** Every declared column must be in the mirror: a mirror older than the declarations says how to fix it. */
function checkColumns(sqlite: Sqlite, table: TableSpec, type: string | undefined): void {
  if (type === undefined)
    throw new ExportUsageError(
      `the mirror has no table ${table.name}: it was last migrated by an older fsm-sync; run \`fsm-sync sync\` once to bring it up to date`,
    )
  const present = mirrorColumns(sqlite, table.name)
  const missing = table.columns.filter((c) => !present.has(c.name)).map((c) => c.name)
  if (missing.length > 0)
    throw new ExportUsageError(
      `the mirror's ${table.name} has no column ${missing.join(', ')}: it was last migrated by an older fsm-sync; run \`fsm-sync sync\` once to bring it up to date`,
    )
}
