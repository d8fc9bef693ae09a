// `fsm-sync export`: a consistent snapshot of the mirror as files a warehouse load job reads, one per
// table, plus manifest.json. Everything is read in one read transaction on a read-only connection
// (WAL: the daemon keeps writing meanwhile, and the files show the mirror at one change_log seq).
// Column types follow the TableSpecs (docs/tables.md). With `afterSeq`, each file holds the rows
// changed after that seq instead: the latest change per record (`change_seq`, `change_op`) and the
// row as it is at the snapshot; a deleted record's row carries its deleted_at. A child table's file
// holds the current child rows of every changed parent: a loader replaces the children of each
// parent id in the parent's file with them.
import type { SqlCell } from '../model/rows.js'
import { changeTracking, type ColumnSpec, type TableSpec } from '../model/table-spec.js'
import { firstKeptSeq } from '../store/repositories/change-log-consumers.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import {
  changedRows,
  inReadSnapshot,
  mirrorColumns,
  mirrorObjects,
  snapshotSeq,
  tableRows,
  tablesChangedBetween,
} from '../store/read-models/mirror-snapshot.js'
import { stagedExport } from './staged-export.js'
import { CHANGE_COLUMNS } from './values.js'

export const EXPORT_FORMATS = ['parquet', 'csv', 'jsonl'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

export { MANIFEST_FILE } from './staged-export.js'

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
  /** The columns holding them: how many each, and the first one (a text cut at 40 characters). */
  nulledColumns: { column: string; values: number; example: string }[]
  primaryKey: readonly string[]
  columns: { name: string; kind: ColumnSpec['kind']; type: string; nullable: boolean }[]
  /** An export over several accounts (export-accounts.ts): the file's rows of each account, by id. */
  rowsByAccount?: Record<string, number>
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

/** The changes asked for are no longer in change_log (retention pruned them): exit 1, a full export is needed. */
export class ExportPrunedError extends Error {}

export interface Plan {
  table: TableSpec
  columns: readonly ColumnSpec[]
  /** The file's rows, read from the snapshot (the columns' values in order). */
  rows: () => Iterable<SqlCell[]>
}

/**
 * Writes the files and the manifest (last, so a reader that finds it finds every file). The catalog
 * may be given as a function of the connection: it is then read inside the snapshot, so the custom
 * objects' views it lists are the snapshot's.
 */
export async function exportMirror(
  sqlite: Sqlite,
  catalog: readonly TableSpec[] | ((sqlite: Sqlite) => readonly TableSpec[]),
  options: ExportOptions,
): Promise<ExportManifest> {
  return stagedExport(options, (open) =>
    // One read transaction: the first read fixes the snapshot every later read sees.
    inReadSnapshot(sqlite, async () => {
      const seq = snapshotSeq(sqlite)
      const afterSeq = options.afterSeq ?? null
      if (afterSeq !== null && afterSeq > seq)
        throw new ExportUsageError(`--after-seq ${afterSeq} is past the mirror's last change (seq ${seq}): nothing can follow it yet`)
      if (afterSeq !== null && afterSeq < seq) {
        // Retention prunes change_log: changes after afterSeq that are gone would be missed silently.
        const first = firstKeptSeq(sqlite)
        if (first === undefined || first > afterSeq + 1)
          throw new ExportPrunedError(
            `changes after ${afterSeq} were pruned (the oldest kept is ${first ?? 'none: every change was pruned'}); run a full export, and register the loader as a consumer (fsm-sync consumers add NAME) so retention waits for it`,
          )
      }
      const plans = plan(sqlite, typeof catalog === 'function' ? catalog(sqlite) : catalog, options, seq)
      const tables: ExportedTable[] = []
      for (const p of plans) {
        const file = await open(p.table.name, p.table.primaryKey, p.columns)
        for (const cells of p.rows()) file.row(cells)
        const exported = await file.close()
        tables.push(exported)
        await options.onTable?.(exported)
      }
      const manifest: ExportManifest = { format: options.format, exportedAt: new Date(options.now).toISOString(), seq, afterSeq, tables }
      return manifest
    }),
  )
}

/** The tables to write and how to read each (`options.tables`, `afterSeq`: what they select). */
export function plan(
  sqlite: Sqlite,
  catalog: readonly TableSpec[],
  options: Pick<ExportOptions, 'tables' | 'afterSeq'>,
  seq: number,
): Plan[] {
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
    if (table.role === 'data' && objects.get(table.name) !== 'view' && changeTracking(table, catalog) === 'whole')
      throw new ExportUsageError(
        `--after-seq: ${table.name} is kept whole, its changes are not recorded in change_log; export it whole without --after-seq`,
      )
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
