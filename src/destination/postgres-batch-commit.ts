// One batch of an account committed in one Postgres transaction with its cursor: the account's state
// row locked (another mirror, or another replicator that moved the cursor, stops it), the rows written
// (postgres-batch-writer.ts), the state row moved.
import type { Batch } from './batch-reader.js'
import { writeBatch, type WriteBatchOptions } from './postgres-batch-writer.js'
import { DestinationError } from './postgres-errors.js'
import { lockStateRow, moveStateRow, replacement } from './postgres-state-row.js'
import type { WrittenState } from './replica-state.js'
import type { Fence } from './destination-options.js'

export interface CommitOptions extends WriteBatchOptions {
  /** The cursor the batch was read from, and the one it moves to. */
  from: number
  to: number
  mirrorId: string | undefined
  otherMirror: (theirs: string) => DestinationError
  /** The time recorded as updated_at (ISO). */
  now: string
  /** The fencing check, the transaction's last statement before COMMIT (destination-options.ts). */
  fence?: Fence | undefined
  /** The lease epoch written under (sharding): a mirror recorded under a lower one is replaced by a load. */
  epoch?: number | undefined
}

/** Commits the batch; `written` (the caller's copy) is brought to what is written. Rolls back and throws on failure. */
export async function commitBatch(
  o: CommitOptions,
  batch: Batch,
  written: WrittenState,
): Promise<{ kind: 'committed'; rows: number } | { kind: 'cursor-moved'; cursor: number } | { kind: 'replaced'; reason: string }> {
  const { client, schema, accountId } = o
  await client.query('BEGIN')
  try {
    const state = await lockStateRow(client, schema, accountId)
    // Another mirror took the replica over (replicate --reseed from it) while this one followed.
    const theirs = state?.mirrorId
    if (theirs != null && theirs !== o.mirrorId) {
      const reason = replacement(o.epoch, state!.mirrorEpoch)
      if (reason === undefined) throw o.otherMirror(theirs)
      // Sharding: the account's earlier owner fed it; this owner's mirror replaces it with a load.
      await client.query('ROLLBACK')
      return { kind: 'replaced', reason }
    }
    if (state === undefined) throw new DestinationError('transient', 'the destination state row is gone; loading again')
    if (state.cursor !== o.from) {
      // Another replicator moved the cursor (a `replicate` beside the daemon): read it again.
      await client.query('ROLLBACK')
      return { kind: 'cursor-moved', cursor: state.cursor }
    }
    const result = await writeBatch(o, batch, written)
    // A view that failed is tried again at the next start, not at every batch: its hash is stored only once built.
    const viewsHash = batch.views === undefined ? undefined : result.viewsBuilt ? batch.views.hash : null
    await moveStateRow(client, schema, accountId, {
      cursor: o.to,
      updatedAt: o.now,
      written,
      viewsHash,
      syncState: batch.syncState,
      epoch: o.epoch,
    })
    // Last, so the lease row is locked only for the commit: a replica paused mid-batch holds no lock a takeover waits for.
    await o.fence?.(client)
    await client.query('COMMIT')
    return { kind: 'committed', rows: result.rows }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  }
}
