// One batch of one account's replica: read from the mirror (batch-reader.ts, every table compared by
// content when a check is due), written in one Postgres transaction with the cursor
// (postgres-batch-commit.ts), and the position moved to what it committed.
import type pg from 'pg'
import { takeoverProgress } from '../store/repositories/takeover-state.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { readBatch, type Batch } from './batch-reader.js'
import { commitBatch } from './postgres-batch-commit.js'
import type { ReplicaContext } from './replica-context.js'
import { otherMirror, syncConsumer } from './replica-identity.js'
import { rebuildViews, viewsHash } from './replica-load.js'
import { copyWritten, type BatchOutcome } from './replica-state.js'

const PRUNED_REASON = 'the mirror pruned changes it had not read'

/** Applies the next batch of changes in one Postgres transaction with the cursor, and says what it did. */
export async function applyBatch(ctx: ReplicaContext): Promise<BatchOutcome> {
  const { position } = ctx
  const sqlite = ctx.conn.reader!.sqlite
  const cursor = position.cursor ?? 0
  const batch = nextBatch(ctx, sqlite, cursor)
  const pruned = batch.firstKept === undefined ? 0 : batch.firstKept - 1
  if (batch.gone) return { kind: 'needs-load', reason: PRUNED_REASON }
  const progress = batch.syncState === undefined ? position.syncStateWritten : takeoverProgress(batch.syncState)
  const moved = progress !== position.syncStateWritten || pruned > position.prunedThrough
  if (batch.changes.length === 0 && batch.snapshots.size === 0 && batch.views === undefined && !moved) {
    return { kind: 'idle' }
  }
  // A session only for a batch that writes: an idle account holds no connection.
  const client = await ctx.conn.acquire()
  return ctx.conn.watch(() => writeBatch(ctx, client, batch, cursor, pruned))
}

/** Reads the next batch (batch-reader.ts); every table compared by content when a check is due. */
function nextBatch(ctx: ReplicaContext, sqlite: Sqlite, cursor: number): Batch {
  const { options, position } = ctx
  const now = options.clock.now()
  const checkAll = position.forceSnapshotCheck || now - position.lastSnapshotCheck >= options.snapshotCheckMs
  if (checkAll) {
    position.lastSnapshotCheck = now
    position.forceSnapshotCheck = false
  }
  return readBatch(sqlite, cursor, {
    tables: ctx.tables,
    byName: ctx.byName,
    batchSize: options.batchSize,
    written: position.written,
    checkAll,
    viewsHash: (types) => viewsHash(ctx, types),
  })
}

async function writeBatch(ctx: ReplicaContext, client: pg.Client, batch: Batch, cursor: number, pruned: number): Promise<BatchOutcome> {
  const { options, position, health } = ctx
  const to = batch.changes.length === 0 ? cursor : batch.changes[batch.changes.length - 1]!.seq
  const written = copyWritten(position.written)
  const committed = await commitBatch(
    {
      client,
      schema: options.schema,
      accountId: options.accountId,
      log: ctx.log,
      onNotInstant: ctx.onNotInstant,
      changeLog: ctx.byName.get('change_log'),
      pruneThrough: pruned > position.prunedThrough ? pruned : undefined,
      rebuildViews: (types) => rebuildViews(ctx, client, types),
      from: cursor,
      to,
      mirrorId: position.mirrorId,
      otherMirror: (theirs) => otherMirror(ctx, theirs),
      now: new Date(options.clock.now()).toISOString(),
      fence: ctx.fence,
      epoch: ctx.epoch,
    },
    batch,
    written,
  )
  if (committed.kind === 'cursor-moved') {
    position.cursor = committed.cursor
    return { kind: 'cursor-moved' }
  }
  if (committed.kind === 'replaced') return { kind: 'needs-load', reason: committed.reason }
  if (batch.syncState !== undefined) position.syncStateWritten = takeoverProgress(batch.syncState)
  const rows = committed.rows
  // A view that failed is not tried again at every batch: its hash is kept here, not in the state row.
  if (batch.views !== undefined) written.viewsHash = batch.views.hash
  position.written = written
  position.prunedThrough = Math.max(position.prunedThrough, pruned)
  position.cursor = to
  health.counts.changesApplied += batch.changes.length
  health.counts.rowsReplicated += rows
  if (batch.changes.length > 0) {
    try {
      const now = new Date(options.clock.now()).toISOString()
      // Removed by hand (`consumers remove --force`) while it runs: registered again at its position.
      if (!ctx.consumers.ack(ctx.consumerName, to, now)) syncConsumer(ctx, to)
      health.recordViewErrorAgain()
    } catch (err) {
      ctx.log.debug({ err }, 'cannot record the destination position in the mirror')
    }
  }
  return { kind: 'applied', changes: batch.changes.length }
}
