// Keeps the mirror's bookkeeping tables from growing for ever: one pass removes what is older than
// its horizon, in bounded batches, then gives freed pages back to the file system. The daemon runs
// it on `schedules.retention`; the clock's now and the settings are passed in.
//
// webhook_inbox. Only applied rows (processed_at set) are touched: a row not applied yet, or kept
// with an error (error set, processed_at NULL), stays with its body until the operator deals with
// it, whatever its age. An applied row first loses its body after `deliveriesDays`, keeping a
// compact row whose delivery id makes a replay of that delivery a duplicate (the signature covers
// the body only, so a captured delivery verifies for ever). The compact row goes after
// `deliveryIdsDays`: a replay older than that is applied again, which newer-wins makes harmless
// for snapshots and deletions, and a replayed `job.status_changed` is corrected by its follow-up
// GET. The row with the highest seq is never deleted: the inbox numbers new rows from it, and the
// processor's cursor must keep moving forward.
//
// sync_runs: finished runs older than `runsDays`, except the last run each stream points at. Quiet
// sweeps (successful, no row changed) go after one day already: continuous sweeping writes about
// one a second, and only a stream's last few feed its staleness figure (stream-freshness.ts).
// calendar_changes: rows fetched more than `calendarChangesDays` ago (the feed's resume point lives
// in sync_state, so nothing is read twice). change_log: rows older than `changeLogDays` that every
// registered consumer has read (src/store/repositories/change-log-consumers.ts); unset, change_log keeps everything.
import { setImmediate as nextTurn } from 'node:timers/promises'
import { pruneHorizon } from './change-log-consumers.js'
import { freeUnusedPages } from '../sqlite/incremental-vacuum.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { quoteIdentifier } from '../../model/sql-names.js'

/** Whole days, or "off": that table keeps everything. */
export type RetentionDays = number | 'off'

export interface RetentionSettings {
  deliveriesDays: RetentionDays
  deliveryIdsDays: RetentionDays
  runsDays: RetentionDays
  calendarChangesDays: RetentionDays
  /** change_log rows older than this that every consumer has read go; unset or "off": none go. */
  changeLogDays?: RetentionDays
  /** A consumer further behind than this no longer holds change_log rows back (it is loaded again). */
  changeLogHoldDays?: RetentionDays
  /** Rows per statement (each its own transaction); the event loop is yielded between them. */
  batchRows: number
  /** Free pages given back per pass at most; 0 gives none back. */
  vacuumPages: number
}

/** What a pass removed, by metric label: `webhook_inbox_bodies` counts bodies dropped, the rest rows deleted. */
export type RetentionCounts = Record<'webhook_inbox_bodies' | 'webhook_inbox' | 'sync_runs' | 'calendar_changes' | 'change_log', number>

export interface RetentionResult {
  removed: RetentionCounts
  /** Pages given back to the file system. */
  freedPages: number
  /** Stopped between two batches by the signal: the next pass goes on. */
  aborted: boolean
}

export interface RetentionOptions {
  signal?: AbortSignal
  /** Awaited between two batches; the next turn of the event loop by default (webhook acks run then). */
  pause?: () => Promise<void>
}

const DAY_MS = 86_400_000
/**
 * Days a quiet sweep (successful, no row changed) is kept, when runsDays is longer or "off": they
 * are the noise of continuous sweeping (about one a second), so "off" keeps every other run but
 * not them. Sweeps that changed rows keep runsDays (with "off", for good: one row per sweep that
 * found a change, which grows with the account's activity; docs/sweeping.md, Continuous sweeping).
 */
export const QUIET_SWEEP_DAYS = 1

/** Columns the compact row gets its own values for: the body, and when it was dropped. */
const BODY_COLUMNS = new Set(['raw', 'raw_bytes', 'body_dropped_at'])

/**
 * Drops the bodies of a batch of old applied deliveries. Each row is deleted and inserted again
 * without its body (same delivery id and seq, a new rowid): shrinking rows in place would leave
 * their pages mostly empty (SQLite does not merge pages on update), so the file would not shrink;
 * deleted, their pages are freed whole, and the compact rows pack densely at the table's end. The
 * columns copied are read from the table itself, so a column a later migration adds (or one
 * written by stream selection, `skipped`) is kept rather than silently lost.
 */
function compactBodies(sqlite: Sqlite): { run(droppedAt: unknown, cutoff: unknown, limit: unknown): { changes: number } } {
  const kept = (sqlite.pragma('table_info(webhook_inbox)') as { name: string }[]).map((c) => c.name).filter((c) => !BODY_COLUMNS.has(c))
  const pick = sqlite
    .prepare(
      `SELECT rowid, ${kept.map(quoteIdentifier).join(', ')} FROM webhook_inbox
       WHERE body_dropped_at IS NULL AND received_at < ? AND processed_at IS NOT NULL
       ORDER BY received_at LIMIT ?`,
    )
    .raw()
  const remove = sqlite.prepare(`DELETE FROM webhook_inbox WHERE rowid = ?`)
  const insert = sqlite.prepare(
    `INSERT INTO webhook_inbox (${kept.map(quoteIdentifier).join(', ')}, raw, raw_bytes, body_dropped_at)
     VALUES (${kept.map(() => '?').join(', ')}, '', NULL, ?)`,
  )
  const batch = sqlite.transaction((droppedAt: string, cutoff: string, limit: number) => {
    const rows = pick.all(cutoff, limit) as unknown[][]
    for (const [rowid] of rows) remove.run(rowid)
    for (const [, ...values] of rows) insert.run(...values, droppedAt)
    return { changes: rows.length }
  })
  return { run: (droppedAt, cutoff, limit) => batch(droppedAt as string, cutoff as string, limit as number) }
}

export async function runRetention(
  sqlite: Sqlite,
  now: number,
  settings: RetentionSettings,
  options: RetentionOptions = {},
): Promise<RetentionResult> {
  const pause = options.pause ?? (() => nextTurn())
  const removed: RetentionCounts = { webhook_inbox_bodies: 0, webhook_inbox: 0, sync_runs: 0, calendar_changes: 0, change_log: 0 }
  const cutoff = (days: RetentionDays) => (days === 'off' ? undefined : new Date(now - days * DAY_MS).toISOString())
  const aborted = () => options.signal?.aborted === true
  const batches = (statement: { run(...params: unknown[]): { changes: number } }, ...params: unknown[]) => ({
    async drain(label: keyof RetentionCounts): Promise<void> {
      for (;;) {
        if (aborted()) return
        const n = statement.run(...params, settings.batchRows).changes
        removed[label] += n
        // A pause after every batch that wrote, short ones too: the next table's first batch
        // must not join this one in the same turn of the event loop.
        if (n > 0) await pause()
        if (n < settings.batchRows) return
      }
    },
  })

  const bodies = cutoff(settings.deliveriesDays)
  if (bodies !== undefined) {
    await batches(compactBodies(sqlite), new Date(now).toISOString(), bodies).drain('webhook_inbox_bodies')
    // An id outlives its body: a shorter setting is read as the body's horizon.
    const idDays = settings.deliveryIdsDays === 'off' ? undefined : Math.max(settings.deliveryIdsDays, settings.deliveriesDays as number)
    if (idDays !== undefined) {
      const ids = sqlite.prepare(
        `DELETE FROM webhook_inbox
         WHERE rowid IN (SELECT rowid FROM webhook_inbox
                         WHERE body_dropped_at IS NOT NULL AND received_at < ?
                           AND seq < (SELECT max(seq) FROM webhook_inbox)
                         ORDER BY received_at LIMIT ?)`,
      )
      await batches(ids, cutoff(idDays)).drain('webhook_inbox')
    }
  }
  const runs = cutoff(settings.runsDays)
  if (runs !== undefined) {
    const del = sqlite.prepare(
      `DELETE FROM sync_runs
       WHERE id IN (SELECT id FROM sync_runs
                    WHERE ended_at IS NOT NULL AND ended_at < ?
                      AND id NOT IN (SELECT last_run_id FROM sync_state WHERE last_run_id IS NOT NULL)
                    ORDER BY id LIMIT ?)`,
    )
    await batches(del, runs).drain('sync_runs')
  }
  const quiet = cutoff(settings.runsDays === 'off' ? QUIET_SWEEP_DAYS : Math.min(settings.runsDays, QUIET_SWEEP_DAYS))!
  const delQuiet = sqlite.prepare(
    `DELETE FROM sync_runs
     WHERE id IN (SELECT id FROM sync_runs
                  WHERE ended_at IS NOT NULL AND ended_at < ? AND kind = 'sweep' AND outcome = 'success' AND rows = 0
                    AND id NOT IN (SELECT last_run_id FROM sync_state WHERE last_run_id IS NOT NULL)
                  ORDER BY id LIMIT ?)`,
  )
  await batches(delQuiet, quiet).drain('sync_runs')
  const changes = cutoff(settings.calendarChangesDays)
  if (changes !== undefined) {
    // Rowids grow with insertion, so the oldest fetches come first and a batch stops early.
    const del = sqlite.prepare(
      `DELETE FROM calendar_changes WHERE rowid IN (SELECT rowid FROM calendar_changes WHERE fetched_at < ? ORDER BY rowid LIMIT ?)`,
    )
    await batches(del, changes).drain('calendar_changes')
  }
  const horizon = pruneHorizon(sqlite, now, {
    changeLogDays: settings.changeLogDays ?? 'off',
    changeLogHoldDays: settings.changeLogHoldDays ?? 'off',
  })
  if (horizon !== undefined && !aborted()) {
    // Oldest first by seq, the table's key: each batch is one range read.
    const del = sqlite.prepare(`DELETE FROM change_log WHERE seq IN (SELECT seq FROM change_log WHERE seq <= ? ORDER BY seq LIMIT ?)`)
    await batches(del, horizon).drain('change_log')
  }
  const freedPages = aborted()
    ? 0
    : await freeUnusedPages(sqlite, settings.vacuumPages, { pause, ...(options.signal === undefined ? {} : { signal: options.signal }) })
  return { removed, freedPages, aborted: aborted() }
}
