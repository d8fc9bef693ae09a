// Reconciliation of one record stream (docs/sweeping.md, How the sync stays exact): lists never show
// deleted records, so walk every live id, take the mirror's live ids that the walk did not meet as
// candidates, confirm each with a GET (404 = deleted; a page walk can skip rows under concurrent
// writes), and mark the confirmed ones deleted. A run that would mark more than `maxDeleteShare` of
// the table marks nothing: an outage or a broken list must not look like a mass deletion.
import type { RecordStream } from '../model/streams.js'
import { NotFoundError } from '../api/errors.js'
import { pageWalk } from '../api/page-walk.js'
import { RecordTable } from '../store/repositories/record-tables.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { isoNow } from '../model/timestamps.js'
import type { RunResult, SyncContext } from './sync-context.js'
import { deletionGuard, trackedRun } from './tracked-run.js'

export function reconcileRecords(ctx: SyncContext, stream: RecordStream): Promise<RunResult> {
  return trackedRun(ctx, 'reconcile', stream.name, async ({ source }) => {
    const writer = new RecordWriter(ctx.mirror.sqlite, stream.table)
    // Creation order ascending: records created during the walk land at its end instead of
    // shifting the pages still to come.
    const walkStartedAt = isoNow(ctx.now())
    const seen = new Set<string>()
    for await (const page of pageWalk(source, stream.route, {
      limit: ctx.options.pageSize,
      query: { sort: 'createdAt:asc' },
      priority: 'reconcile',
      ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
    })) {
      for (const row of page.rows) if (typeof row.id === 'string') seen.add(row.id)
    }
    // Records first stored after the walk began may simply be newer than the walk.
    const table = new RecordTable(ctx.mirror.sqlite, stream.table)
    const live = table.liveIds({ syncedBefore: walkStartedAt })
    const liveCount = table.liveCount()
    const candidates = live.filter((id) => !seen.has(id))
    const guarded = deletionGuard(stream.name, candidates.length, liveCount, ctx.options.maxDeleteShare, seen.size)
    if (guarded !== undefined) return guarded
    let marked = 0
    let confirmedLive = 0
    for (const id of candidates) {
      try {
        const res = await source.get(`${stream.route}/${id}`, undefined, { priority: 'reconcile', signal: ctx.signal })
        // Still there: the walk skipped it. Store what the GET returned (newer-wins).
        if (isRecord(res.data))
          writer.upsert([stream.toRow(res.data)], { now: isoNow(ctx.now()), observedAt: isoNow(source.lastStartedAt), replaceTies: true })
        confirmedLive++
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err
        marked += writer.markDeleted([id], isoNow(ctx.now())).changed.length
      }
    }
    return { rows: marked, details: { walked: seen.size, candidates: candidates.length, confirmedLive } }
  })
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
