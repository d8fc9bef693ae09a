// The initial load of one account: its rows deleted and every table copied with COPY from one read
// snapshot of its mirror, in one Postgres transaction that also builds the views and sets its state
// row's cursor to that snapshot's last change. SQLite writes each COPY line; the JavaScript encoder
// is the fallback. Other accounts' rows are not touched, nor locked: they go on replicating.
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { firstKeptSeq } from '../store/repositories/change-log-consumers.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { readTakeoverState } from '../store/repositories/takeover-state.js'
import { columnRange, inReadSnapshot, snapshotSeq, tableFingerprint, tableLines, tableRows } from '../store/read-models/mirror-snapshot.js'
import type { Table } from './batch-plan.js'
import { objectTypes } from './batch-reader.js'
import { quoteIdentifier } from '../model/sql-names.js'
import { ACCOUNT_COLUMN, qualified, type ObjectType } from './postgres-ddl.js'
import { writeLoadedStateRow } from './postgres-state-row.js'
import { copyLineEncoder, copyLineSql, type OnNotInstant } from './postgres-types.js'
import { emptyWritten, type WrittenState } from './replica-state.js'
import type { Fence } from './destination-options.js'

export interface LoadOptions {
  client: pg.Client
  sqlite: Sqlite
  schema: string
  accountId: string
  tables: readonly Table[]
  /** Encode every value in JavaScript (copyLineEncoder), not in SQLite: for text holding NUL. */
  encodeInJs: boolean
  onNotInstant: OnNotInstant
  /** The declarations' hash and the mirror's identity the state row records. */
  tablesHash: string
  mirrorId: string | undefined
  viewsHash: (types: readonly ObjectType[]) => string
  rebuildViews: (types: readonly ObjectType[]) => Promise<boolean>
  /** The time to record as loaded_at, read once the rows are copied (ISO). */
  now: () => string
  /** The fencing check, the transaction's last statement before COMMIT (destination-options.ts). */
  fence?: Fence | undefined
  /** The lease epoch loaded under (sharding), recorded with the mirror's identity. */
  epoch?: number | undefined
}

export interface Loaded {
  rows: number
  /** The snapshot's last change: the cursor. */
  seq: number
  /** Changes at or below this seq were pruned from the mirror when it was read. */
  prunedThrough: number
  written: WrittenState
  loadedAt: string
}

/** Loads the replica; commits, or rolls back and throws. */
export async function loadSnapshot(o: LoadOptions): Promise<Loaded> {
  const { client, sqlite, schema } = o
  try {
    await client.query('BEGIN')
    // The account's rows are deleted (row locks only: the other accounts write on, readers see the old
    // rows until the commit) before the mirror's read snapshot opens: a wait on Postgres never holds
    // the mirror's write-ahead log from its checkpoints.
    for (const t of o.tables) {
      await client.query(`DELETE FROM ${qualified(schema, t.spec.name)} WHERE ${quoteIdentifier(ACCOUNT_COLUMN)} = $1`, [o.accountId])
    }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  }
  // The snapshot starts with the read of its seq: every table below is read as of this change.
  return inReadSnapshot(sqlite, async () => {
    try {
      const seq = snapshotSeq(sqlite)
      let rows = 0
      for (const t of o.tables) rows += await copyTable(o, t)
      const written = emptyWritten()
      for (const t of o.tables) {
        if (t.role !== 'snapshot') continue
        written.fingerprints.set(t.spec.name, tableFingerprint(sqlite, t.spec))
        const by = t.spec.appendedBy
        const max = by === undefined ? null : columnRange(sqlite, t.spec, by).max
        if (max !== null) written.watermarks.set(t.spec.name, max)
      }
      const types = objectTypes(sqlite)
      const viewsHash = o.viewsHash(types)
      const viewsBuilt = await o.rebuildViews(types)
      const loadedAt = o.now()
      await writeLoadedStateRow(client, schema, o.accountId, {
        seq,
        tablesHash: o.tablesHash,
        loadedAt,
        viewsHash: viewsBuilt ? viewsHash : null,
        written,
        mirrorId: o.mirrorId,
        epoch: o.epoch,
        syncState: readTakeoverState(sqlite),
      })
      // Last, so the lease row is locked only for the commit: a replica paused mid-load holds no lock a takeover waits for.
      await o.fence?.(client)
      await client.query('COMMIT')
      // A view that failed is tried again at the next start, not at every batch.
      written.viewsHash = viewsHash
      return { rows, seq, prunedThrough: (firstKeptSeq(sqlite) ?? seq + 1) - 1, written, loadedAt }
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined)
      throw err
    }
  })
}

async function copyTable(o: LoadOptions, t: Table): Promise<number> {
  const { sqlite, onNotInstant } = o
  // SQLite writes each row's COPY line itself (copyLineSql, tableLines): JavaScript only joins them into chunks.
  const lines: () => Iterable<string> = o.encodeInJs
    ? function* () {
        const encode = copyLineEncoder(t.columns, onNotInstant)
        for (const values of tableRows(sqlite, t.spec, { keyOrder: false })) yield encode(values)
      }
    : () => tableLines(sqlite, t.spec, copyLineSql(t.columns), { keyOrder: false })
  let count = 0
  // Every line starts with the account (an id holds no character COPY's text format escapes, but escaped anyway).
  const prefix = `${o.accountId.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}\t`
  function* chunks(): Generator<string> {
    let chunk = ''
    for (const line of lines()) {
      chunk += prefix + line
      count++
      if (chunk.length >= 262_144) {
        yield chunk
        chunk = ''
      }
    }
    if (chunk !== '') yield chunk
  }
  const sql = `COPY ${qualified(o.schema, t.spec.name)} (${[ACCOUNT_COLUMN, ...t.columns.map((c) => c.name)].map(quoteIdentifier).join(', ')}) FROM STDIN`
  await pipeline(Readable.from(chunks(), { objectMode: false }), o.client.query(copyFrom(sql)))
  return count
}
