// The incremental sweep of one record stream: the updatedAt keyset (docs/sweeping.md, How the sync stays
// exact), each page's rows and the cursor that covers them committed in one transaction, so a kill
// loses at most the page in flight and the next run goes on from the last checkpoint
// (docs/guarantees.md, Killed at any moment).
import type { RecordStream } from '../model/streams.js'
import { KeysetCursorSchema, updatedAtKeyset, type KeysetCursor } from '../api/keyset/index.js'
import type { RecordRow } from '../model/rows.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { isoNow, parseInstant } from '../model/timestamps.js'
import type { RunResult, SyncContext } from './sync-context.js'
import { requestsFor } from '../model/backfill-estimate.js'
import type { ProgressUpdate } from './progress.js'
import type { FirstPages } from './first-pages.js'
import { resumeCursor } from './resume-cursor.js'
import { trackedRun } from './tracked-run.js'

export interface SweepOptions {
  /** Ignore the stored cursor and walk everything (`sync --full`). */
  full?: boolean
  /**
   * Stop after this many pages once the cursor has moved past where the walk began (the cursor is
   * committed with each page, so the next sweep goes on from there). The daemon's continuous sweeps
   * set it so a backfill takes turns with the other streams (docs/sweeping.md, Continuous sweeping). A
   * capped sweep records `details.capped`: it did not reach the end, and is not counted as a sweep
   * to the end by `status` and the staleness figure (src/store/read-models/stream-freshness.ts).
   */
  maxPages?: number
  /** First pages read ahead for the batch's backfills (first-pages.ts): a walk from the start takes its own as its first answer. */
  firstPages?: FirstPages | undefined
}

/** Whether `cursor` lies past `from` (the stored cursor the walk began at; undefined: a first walk). */
function movedPast(cursor: KeysetCursor | undefined, from: KeysetCursor | undefined): boolean {
  if (cursor === undefined) return false
  return from === undefined || parseInstant(cursor.since) > parseInstant(from.since)
}

export function sweepRecords(ctx: SyncContext, stream: RecordStream, options: SweepOptions = {}): Promise<RunResult> {
  // The run's row is written with its first commit: an incremental sweep that finds nothing commits
  // once, at its end (tracked-run.ts). A backfill writes it at once, for `status` to show it.
  return trackedRun(
    ctx,
    'sweep',
    stream.name,
    async (scope) => {
      const { source, committed, runId } = scope
      const writer = new RecordWriter(ctx.mirror.sqlite, stream.table)
      // An unreadable cursor restarts the stream with a full walk, not from the newest updatedAt in
      // its table: webhooks write that table too, so its newest row says nothing of how far the
      // sweep had come. Re-reading is harmless (newer wins) and costs one backfill's requests.
      const { cursor: stored, cursorReset } =
        options.full === true ? { cursor: undefined } : resumeCursor(ctx, stream.name, runId, KeysetCursorSchema, 'a full walk')
      const backfill = stored === undefined
      const progress = { rowsRead: 0, rowsRemaining: undefined as number | undefined }
      const report = (done: boolean): ProgressUpdate => ({
        stream: stream.name,
        rowsRead: progress.rowsRead,
        rowsChanged: committed.rows,
        rowsRemaining: done ? 0 : progress.rowsRemaining,
        requests: source.requests,
        backfill,
        done,
      })
      // What `status` in another process reads in the run's row: written with the row (a backfill
      // whose size is not known yet) and then with each page, in the page's transaction.
      const store = (rowsChanged: number, now: string) => {
        const remaining = progress.rowsRemaining
        ctx.state.setRunProgress(runId(), {
          rowsRead: progress.rowsRead,
          rowsChanged,
          requests: source.requests,
          rowsRemaining: remaining ?? null,
          requestsRemaining: remaining === undefined ? null : requestsFor(remaining, ctx.options.pageSize),
          backfill,
          budgetPerMinute: ctx.budgetPerMinute?.() ?? null,
          at: now,
        })
      }
      if (backfill) ctx.mirror.sqlite.transaction(() => store(0, isoNow(ctx.now())))()
      const commit = ctx.mirror.sqlite.transaction((rows: RecordRow[], cursor: KeysetCursor | undefined, observedAt: string) => {
        const now = isoNow(ctx.now())
        const { changed } = writer.upsert(rows, { now, observedAt, replaceTies: true })
        if (cursor !== undefined) ctx.state.setCursor(stream.name, cursor, now)
        store(committed.rows + changed.length, now)
        return changed.length
      })
      // A page that brought no row moves only the cursor: that waits for the run's next commit (a
      // later page's, or the run's end), so a quiet sweep commits once. A kill before then re-reads
      // a page that held nothing.
      const commitOrDefer = (rows: RecordRow[], cursor: KeysetCursor | undefined, observedAt: string): number => {
        if (rows.length > 0) {
          scope.deferred = undefined
          return commit(rows, cursor, observedAt)
        }
        if (cursor !== undefined) {
          const at = isoNow(ctx.now())
          scope.deferred = () => ctx.state.setCursor(stream.name, cursor, at)
        }
        return 0
      }
      let pages = 0
      let capped = false
      const firstAnswered = backfill && options.firstPages !== undefined ? options.firstPages.take(stream.name, source) : source
      for await (const page of updatedAtKeyset(firstAnswered, stream.route, {
        cursor: stored,
        limit: ctx.options.pageSize,
        // The allowance for upstream commit lag: how the stored cursor's re-read point is derived.
        lookbackMs: ctx.options.lookbackMs,
        clock: { now: ctx.now },
        onWarning: (message) => ctx.logger.warn({ stream: stream.name }, message),
        // A first walk is a backfill: it yields to incremental sweeps of other streams (docs/sweeping.md,
        // The request budget).
        priority: backfill ? 'reconcile' : 'sweep',
        ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
      })) {
        progress.rowsRead += page.rows.length
        progress.rowsRemaining = page.remaining
        committed.rows += commitOrDefer(
          page.rows.map((r) => stream.toRow(r)),
          page.cursor,
          isoNow(source.lastStartedAt),
        )
        ctx.progress?.update(report(false))
        // A walk stops at the cap only when its cursor moved on, so the next one starts further on (a
        // tie larger than the cap is read through); a last page (nothing remaining) is the end.
        if (++pages >= (options.maxPages ?? Infinity) && page.remaining !== 0 && movedPast(page.cursor, stored)) {
          capped = true
          break
        }
      }
      if (!capped) ctx.progress?.update(report(true))
      const details = { ...(cursorReset === undefined ? {} : { cursorReset }), ...(capped ? { capped: true } : {}) }
      return { rows: committed.rows, ...(Object.keys(details).length === 0 ? {} : { details }) }
    },
    { rowAtFirstCommit: true },
  )
}
