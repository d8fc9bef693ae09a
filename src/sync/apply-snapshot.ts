// A complete listing applied to its table: rows upsert (newer-wins, ties replaced), live rows the
// listing no longer holds get deleted_at, all in one transaction. Shared by reference data and
// account metadata.
import type { RecordRow } from '../model/rows.js'
import { RecordTable } from '../store/repositories/record-tables.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { isoNow } from '../model/timestamps.js'
import type { SyncContext } from './sync-context.js'

export interface SnapshotOptions {
  /** The request start of the listing (see UpsertOptions.observedAt). */
  observedAt: string
  /** Take an empty listing over a non-empty table for a broken answer: mark nothing deleted. */
  refuseEmpty: boolean
  stream: string
}

/** Returns the rows changed (inserted, updated or marked deleted). */
export function applySnapshot(ctx: SyncContext, table: string, rows: readonly RecordRow[], options: SnapshotOptions): number {
  const writer = new RecordWriter(ctx.mirror.sqlite, table)
  return ctx.mirror.sqlite.transaction(() => {
    const now = isoNow(ctx.now())
    let n = writer.upsert(rows, { now, observedAt: options.observedAt, replaceTies: true }).changed.length
    const seen = new Set(rows.map((r) => r.id))
    const live = new RecordTable(ctx.mirror.sqlite, table).liveIds()
    if (options.refuseEmpty && rows.length === 0 && live.length > 0) {
      ctx.logger.warn({ stream: options.stream, live: live.length }, 'empty snapshot over a non-empty table: nothing marked deleted')
    } else {
      n += writer.markDeleted(
        live.filter((id) => !seen.has(id)),
        now,
      ).changed.length
    }
    return n
  })()
}
