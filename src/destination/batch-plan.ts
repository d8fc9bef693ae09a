// The plan of a batch, pure: what each table is to the replicator, which rows the changes after the
// cursor name, and from the rows the mirror holds for them, per table the keys to delete, the rows
// to upsert and the child rows to replace; which tables compared by content to read again; and
// whether the changes after the cursor are gone (the replica must be loaded again).
import type { SqlCell } from '../model/rows.js'
import { changeTracking, type ColumnSpec, type TableSpec } from '../model/table-spec.js'
import type { LoggedChange } from '../store/read-models/mirror-snapshot.js'
import type { WrittenState } from './replica-state.js'
import { decodeChangeKey } from '../model/change-key.js'

/** `changes` is change_log itself; `snapshot` a table without change_log entries, compared by content. */
export type TableRole = 'changes' | 'logged' | 'child' | 'snapshot'

export interface Table {
  spec: TableSpec
  role: TableRole
  columns: readonly ColumnSpec[]
  children: Table[]
  hasUpdatedAt: boolean
}

export type Row = (SqlCell | undefined)[]

/** What one batch writes to a logged table and to its children. */
export interface TablePlan {
  table: Table
  /** Keys of the rows the changes name that the mirror no longer holds. */
  deletes: string[][]
  /** The rows the changes name, as the mirror holds them now. */
  upserts: Row[]
  /** Children follow their parent: replaced for every parent that changed, present or not. */
  children: { table: Table; parentIds: string[]; rows: Row[] }[]
}

/** What to read of a table without change_log entries whose fingerprint moved. */
export type SnapshotRead = { kind: 'unchanged' } | { kind: 'whole' } | { kind: 'since'; column: string; watermark: string }

/** What a table is to the replicator, derived from its declaration. */
function roleOf(spec: TableSpec, all: readonly TableSpec[]): TableRole {
  if (spec.name === 'change_log') return 'changes'
  const tracking = changeTracking(spec, all)
  return tracking === 'whole' ? 'snapshot' : tracking
}

export function planTables(specs: readonly TableSpec[]): Table[] {
  const tables = specs.map((spec): Table => ({
    spec,
    role: roleOf(spec, specs),
    columns: spec.columns,
    children: [],
    hasUpdatedAt: spec.columns.some((c) => c.name === 'updated_at' && c.kind === 'time'),
  }))
  const byName = new Map(tables.map((t) => [t.spec.name, t]))
  for (const t of tables) if (t.role === 'child') byName.get(t.spec.parent!.table)!.children.push(t)
  return tables
}

/** Per logged table, the keys its changes name, once each, in the order of their first change. */
export function changedKeys(byName: ReadonlyMap<string, Table>, changes: readonly LoggedChange[]): Map<Table, string[][]> {
  const ids = new Map<Table, Set<string>>()
  for (const c of changes) {
    const t = byName.get(c.table_name)
    if (t === undefined || t.role !== 'logged') continue
    let set = ids.get(t)
    if (set === undefined) ids.set(t, (set = new Set()))
    set.add(c.record_id)
  }
  const pkLength = (t: Table) => t.spec.primaryKey.length
  return new Map([...ids].map(([t, set]) => [t, [...set].map((id) => decodeChangeKey(id, pkLength(t)))]))
}

/** The parent ids whose child rows a change of these keys replaces: the last column of each key. */
export function parentIds(keys: readonly string[][]): string[] {
  return keys.map((k) => k[k.length - 1]!)
}

/**
 * The plan of a batch from the keys its changes name (changedKeys) and what the mirror holds now:
 * `current` the rows with those keys, `childRows` each child table's rows of those parents.
 */
export function planBatch(
  keys: ReadonlyMap<Table, string[][]>,
  current: ReadonlyMap<Table, readonly Row[]>,
  childRows: ReadonlyMap<Table, readonly Row[]>,
): TablePlan[] {
  return [...keys].map(([t, tableKeys]): TablePlan => {
    const pkIndex = t.spec.primaryKey.map((k) => t.columns.findIndex((c) => c.name === k))
    const upserts = [...(current.get(t) ?? [])]
    const found = new Set(upserts.map((r) => pkIndex.map((k) => String(r[k])).join('\u0000')))
    const deletes = tableKeys.filter((k) => !found.has(k.join('\u0000')))
    const parents = parentIds(tableKeys)
    const children = t.children.map((child) => ({ table: child, parentIds: parents, rows: [...(childRows.get(child) ?? [])] }))
    return { table: t, deletes, upserts, children }
  })
}

/** What to read of a table compared by content, given its fingerprint now: the new rows only for an appended table read before. */
export function snapshotRead(t: Table, fingerprint: string, written: WrittenState): SnapshotRead {
  if (written.fingerprints.get(t.spec.name) === fingerprint) return { kind: 'unchanged' }
  const by = t.spec.appendedBy
  const mark = by === undefined ? undefined : written.watermarks.get(t.spec.name)
  return by === undefined || mark === undefined ? { kind: 'whole' } : { kind: 'since', column: by, watermark: mark }
}

/**
 * Whether the changes after the cursor are gone from the mirror (retention went past a consumer that
 * stopped holding rows back): the first change read is not the next one and the mirror pruned past
 * the cursor, or it keeps no change at all and its last is past the cursor.
 */
export function changesGone(
  cursor: number,
  changes: readonly LoggedChange[],
  firstKept: number | undefined,
  lastSeq: () => number,
): boolean {
  const pruned = firstKept === undefined ? 0 : firstKept - 1
  if (changes.length > 0) return changes[0]!.seq > cursor + 1 && pruned > cursor
  return firstKept === undefined && lastSeq() > cursor
}
