// Reads the next batch from one read snapshot of the mirror: the changes after the cursor, the rows
// they name and their children, the tables compared by content whose fingerprint moved, and the
// custom objects' fields when the views may need building. What to read is batch-plan.ts's decision.
import { firstKeptSeq, lastChangeSeq } from '../store/repositories/change-log-consumers.js'
import { CustomObjectTypes } from '../store/repositories/custom-object-types.js'
import { readTakeoverState } from '../store/repositories/takeover-state.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import {
  changesAfter,
  childRowsOf,
  columnRange,
  rowsFrom,
  rowsWithKeys,
  tableFingerprint,
  tableRows,
  type LoggedChange,
} from '../store/read-models/mirror-snapshot.js'
import { changedKeys, changesGone, parentIds, planBatch, snapshotRead, type Row, type Table, type TablePlan } from './batch-plan.js'
import type { ObjectType } from './postgres-ddl.js'
import type { WrittenState } from './replica-state.js'

/**
 * A table without change_log entries to write: its fingerprint and rows, all of them, or for an
 * appended table (TableSpec.appendedBy) read before, only those at or after the watermark.
 */
export interface Snapshot {
  hash: string
  rows: Row[]
  appended?: { column: string; incremental: boolean; min: string | null; max: string | null; count: number }
}

export interface Batch {
  changes: LoggedChange[]
  /** The changes after the cursor are gone from the mirror: the replica must be loaded again. */
  gone: boolean
  /** Per logged table changed: deletes, upserts, child replacements. */
  tables: TablePlan[]
  /** Tables without change_log entries whose fingerprint differs from what was last written, with their rows. */
  snapshots: Map<Table, Snapshot>
  /** The views to build, when their hash differs from the one last built. */
  views: { hash: string; types: ObjectType[] } | undefined
  firstKept: number | undefined
  /**
   * The mirror's takeover state (takeover-state.ts), read when this batch brings the replica to the
   * whole snapshot (every change read, every table compared): undefined otherwise.
   */
  syncState: string | undefined
}

export interface BatchReadOptions {
  tables: readonly Table[]
  byName: ReadonlyMap<string, Table>
  batchSize: number
  written: WrittenState
  /** Compare every table without change_log entries (else only custom_object_types). */
  checkAll: boolean
  viewsHash: (types: readonly ObjectType[]) => string
}

export function objectTypes(sqlite: Sqlite): ObjectType[] {
  return new CustomObjectTypes(sqlite).fields()
}

/** Reads the next batch after `cursor` and everything it needs from one read snapshot of the mirror. */
export function readBatch(sqlite: Sqlite, cursor: number, o: BatchReadOptions): Batch {
  const read = sqlite.transaction((): Batch => {
    const changes = changesAfter(sqlite, cursor, o.batchSize)
    const firstKept = firstKeptSeq(sqlite)
    const keys = changedKeys(o.byName, changes)
    const current = new Map<Table, Row[]>()
    const childRows = new Map<Table, Row[]>()
    for (const [t, tableKeys] of keys) {
      current.set(t, rowsWithKeys(sqlite, t.spec, tableKeys))
      for (const child of t.children) childRows.set(child, childRowsOf(sqlite, child.spec, parentIds(tableKeys)))
    }
    const snapshots = new Map<Table, Snapshot>()
    for (const t of o.tables) {
      // custom_object_types holds the views' fields: checked with every batch, so a view matches the rows it reads.
      if (t.role !== 'snapshot' || (!o.checkAll && t.spec.name !== 'custom_object_types')) continue
      // The fingerprint is computed in SQLite: the rows are read only when it moved.
      const fp = tableFingerprint(sqlite, t.spec)
      const what = snapshotRead(t, fp, o.written)
      if (what.kind === 'unchanged') continue
      const by = t.spec.appendedBy
      if (by === undefined) {
        snapshots.set(t, { hash: fp, rows: [...tableRows(sqlite, t.spec, { keyOrder: false })] })
        continue
      }
      // An appended table (calendar_changes) is followed by its appendedBy column: the new rows only.
      const range = columnRange(sqlite, t.spec, by)
      const incremental = what.kind === 'since'
      const rows =
        what.kind === 'since' ? rowsFrom(sqlite, t.spec, by, what.watermark) : [...tableRows(sqlite, t.spec, { keyOrder: false })]
      snapshots.set(t, { hash: fp, rows, appended: { column: by, incremental, ...range } })
    }
    let views: Batch['views']
    const typesTable = o.byName.get('custom_object_types')
    // With every check too: views a new release defines or names differently are built without a load.
    if (o.checkAll || o.written.viewsHash === undefined || typesTable === undefined || snapshots.has(typesTable)) {
      const types = objectTypes(sqlite)
      const hash = o.viewsHash(types)
      if (o.written.viewsHash !== hash) views = { hash, types }
    }
    const gone = changesGone(cursor, changes, firstKept, () => lastChangeSeq(sqlite))
    // Cursors replicated only with rows that cover them: a batch cut short by batchSize leaves the last ones.
    const drained = (changes.length === 0 ? cursor : changes[changes.length - 1]!.seq) >= lastChangeSeq(sqlite)
    const syncState = o.checkAll && drained && !gone ? readTakeoverState(sqlite) : undefined
    return { changes, gone, tables: planBatch(keys, current, childRows), snapshots, views, firstKept, syncState }
  })
  return read()
}
