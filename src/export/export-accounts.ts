// `fsm-sync export --all-accounts`: one export of every account's mirror, each table's file holding the
// rows of every account with `account_id` first (first in the key too, as in the Postgres destination).
// Each mirror is read in its own snapshot, one account after the other, and only one mirror is open at
// a time: the accounts' snapshots are not one moment. A first pass reads each mirror's tables and
// columns, so that every file is opened once with the union of them; the second writes the rows.
import type { SqlCell } from '../model/rows.js'
import type { ColumnSpec, TableSpec } from '../model/table-spec.js'
import { openMirror, type Sqlite } from '../store/sqlite/mirror-database.js'
import { inReadSnapshot, snapshotSeq } from '../store/read-models/mirror-snapshot.js'
import { ExportUsageError, plan, type ExportedTable, type ExportFormat, type ExportOptions, type Plan } from './export-mirror.js'
import { ExportFileError } from './out-dir.js'
import { stagedExport, type TableFile } from './staged-export.js'
import { ACCOUNT_COLUMN } from './values.js'

export interface AccountSource {
  id: string
  /** The account's mirror file. */
  db: string
}

export interface AccountsExportManifest {
  format: ExportFormat
  exportedAt: string
  /** Each account's snapshot, at that mirror's own change_log seq (seqs of different mirrors do not compare). */
  accounts: { id: string; seq: number }[]
  /** Each table's rows per account are in `rowsByAccount` (an account without the table has none). */
  tables: ExportedTable[]
}

/** A mirror of one account failed to open or read: `cause` as the mirror gave it, for the caller to explain. */
export class AccountExportError extends Error {
  constructor(
    readonly account: AccountSource,
    override readonly cause: unknown,
  ) {
    super(`account ${account.id}: ${(cause as Error).message}`, { cause })
  }
}

export type AccountsExportOptions = Omit<ExportOptions, 'afterSeq'>

/** Writes every account's tables and the manifest; `catalog` is read in each mirror's snapshot. */
export async function exportAccounts(
  sources: readonly AccountSource[],
  catalog: (sqlite: Sqlite) => readonly TableSpec[],
  options: AccountsExportOptions,
): Promise<AccountsExportManifest> {
  // First pass: which tables and columns each account has.
  const shapes = new Map<string, Map<string, readonly ColumnSpec[]>>()
  const specs = new Map<string, TableSpec>()
  const known = new Set<string>()
  for (const source of sources) {
    const plans = await inMirror(source, (sqlite) => {
      const tables = catalog(sqlite)
      for (const t of tables) known.add(t.name)
      return plansOf(sqlite, tables, options, snapshotSeq(sqlite))
    })
    shapes.set(source.id, new Map(plans.map((p) => [p.table.name, p.columns])))
    for (const p of plans) if (!specs.has(p.table.name)) specs.set(p.table.name, p.table)
  }
  const unknown = (options.tables ?? []).filter((n) => !known.has(n))
  if (unknown.length > 0)
    throw new ExportUsageError(`--tables: no account has a table ${unknown.join(', ')}; valid: ${[...known].join(', ')}`)
  const columns = new Map(
    [...specs.keys()].map((name) => [
      name,
      mergeColumns(
        [...shapes.values()].flatMap((s) => {
          const cols = s.get(name)
          return cols === undefined ? [] : [cols]
        }),
      ),
    ]),
  )

  return stagedExport(options, async (open) => {
    const files = new Map<string, TableFile>()
    for (const [name, table] of specs)
      files.set(name, await open(name, [ACCOUNT_COLUMN.name, ...table.primaryKey], [ACCOUNT_COLUMN, ...columns.get(name)!]))
    const rowsByAccount = new Map<string, Record<string, number>>([...specs.keys()].map((n) => [n, {}]))
    const accounts: AccountsExportManifest['accounts'] = []
    // Second pass: each account's rows, in one snapshot of its mirror.
    for (const source of sources) {
      const seq = await inMirror(source, (sqlite) => {
        const seq = snapshotSeq(sqlite)
        const plans = plansOf(sqlite, catalog(sqlite), options, seq)
        const before = shapes.get(source.id)!
        if (plans.length !== before.size || plans.some((p) => !sameColumns(before.get(p.table.name), p.columns)))
          throw new Error(`its tables or columns changed while the export ran (a custom object was added or changed): export again`)
        for (const p of plans) {
          const file = files.get(p.table.name)!
          const merged = columns.get(p.table.name)!
          // Each merged column's place in this account's row (-1: the account's table has no such column).
          const at = merged.map((c) => p.columns.findIndex((k) => k.name === c.name))
          let rows = 0
          for (const cells of p.rows()) {
            file.row([source.id, ...at.map((i): SqlCell => (i < 0 ? null : (cells[i] ?? null)))])
            rows++
          }
          rowsByAccount.get(p.table.name)![source.id] = rows
        }
        return seq
      })
      accounts.push({ id: source.id, seq })
    }
    const tables: ExportedTable[] = []
    for (const [name, file] of files) {
      const exported: ExportedTable = { ...(await file.close()), rowsByAccount: rowsByAccount.get(name)! }
      tables.push(exported)
      await options.onTable?.(exported)
    }
    return { format: options.format, exportedAt: new Date(options.now).toISOString(), accounts, tables }
  })
}

/** Opens the account's mirror read-only and runs `read` in one read snapshot of it; its errors name the account. */
async function inMirror<T>(source: AccountSource, read: (sqlite: Sqlite) => T | Promise<T>): Promise<T> {
  let mirror
  try {
    mirror = await openMirror(source.db, { readonly: true })
  } catch (err) {
    throw new AccountExportError(source, err)
  }
  try {
    return await inReadSnapshot(mirror.sqlite, async () => await read(mirror.sqlite))
  } catch (err) {
    if (err instanceof ExportUsageError) throw new ExportUsageError(`account ${source.id}: ${err.message}`)
    // A file of the export's (ENOSPC) is no fault of the account's mirror.
    if (err instanceof ExportFileError) throw err
    throw new AccountExportError(source, err)
  } finally {
    await mirror.close()
  }
}

/** The account's plans: the tables asked for that its catalog has (all its data tables by default). */
function plansOf(sqlite: Sqlite, tables: readonly TableSpec[], options: AccountsExportOptions, seq: number): Plan[] {
  const names = new Set(tables.map((t) => t.name))
  return plan(sqlite, tables, { tables: options.tables?.filter((n) => names.has(n)) }, seq)
}

function sameColumns(a: readonly ColumnSpec[] | undefined, b: readonly ColumnSpec[]): boolean {
  return a !== undefined && a.length === b.length && a.every((c, i) => c.name === b[i]!.name && c.kind === b[i]!.kind)
}

/**
 * The columns of a table over every account that has it: the union, in the order first met. A column
 * typed differently by two accounts (a custom object's field) is written as text; one an account's
 * table lacks is NULL in that account's rows.
 */
export function mergeColumns(parts: readonly (readonly ColumnSpec[])[]): ColumnSpec[] {
  const merged = new Map<string, ColumnSpec>()
  for (const cols of parts)
    for (const c of cols) {
      const seen = merged.get(c.name)
      if (seen === undefined) merged.set(c.name, c)
      else if (seen.kind !== c.kind || (c.nullable && !seen.nullable))
        merged.set(c.name, { ...seen, kind: seen.kind === c.kind ? seen.kind : 'text', nullable: seen.nullable || c.nullable })
    }
  return [...merged.values()].map((c) => (parts.every((cols) => cols.some((k) => k.name === c.name)) ? c : { ...c, nullable: true }))
}
