// How fresh each stream is, read from its recent successful sweeps in sync_runs: when it was last
// swept to the end (a continuous sweep stopped at its page cap, `details.capped`, did not get there
// and is left out), and the expected staleness of a change made upstream without a webhook (one
// only a sweep finds). `status` and the daemon's /metrics both read it here, so they agree.
// docs/sweeping.md, Continuous sweeping, says what the figure means.
import type { Sqlite } from '../sqlite/mirror-database.js'
import { parseInstant } from '../../model/timestamps.js'

/** Recent sweeps of a stream the figure is taken from. */
export const FRESHNESS_SWEEPS = 20

export interface SweepSpan {
  /** Clock ms. */
  startedAt: number
  endedAt: number
}

export interface StreamFreshness {
  stream: string
  /** Clock ms its last successful sweep (or reference read) ended, or null: never. */
  lastSweptAt: number | null
  /** Clock ms its last successful reconciliation ended, or null: never. */
  lastReconciledAt: number | null
  /** Expected seconds between a change without a webhook and its arrival in the mirror; null: never swept. */
  stalenessSeconds: number | null
}

/**
 * Expected staleness from the recent sweeps (newest first): a change made at a random moment waits
 * for the next sweep to begin, half the mean gap between sweep starts, then for that sweep to end,
 * the mean duration. When the next sweep is late (the last one ended longer ago than that), the
 * figure grows with the wait, so a stopped daemon shows as stale. One sweep alone gives no gap:
 * the time since it began.
 */
export function expectedStalenessSeconds(sweeps: readonly SweepSpan[], now: number): number | null {
  const last = sweeps[0]
  if (last === undefined) return null
  if (sweeps.length === 1) return Math.max(0, now - last.startedAt) / 1000
  const oldest = sweeps[sweeps.length - 1]!
  const meanGap = (last.startedAt - oldest.startedAt) / (sweeps.length - 1)
  const meanDuration = sweeps.reduce((sum, s) => sum + Math.max(0, s.endedAt - s.startedAt), 0) / sweeps.length
  const expected = meanGap / 2 + meanDuration
  const overdue = now - last.endedAt - meanGap / 2
  return Math.max(expected, overdue) / 1000
}

/** Freshness of each of `streams`, from sync_runs (its `sync_runs_stream` index keeps this a few rows per stream). */
export function streamFreshness(sqlite: Sqlite, streams: readonly string[], now: number): StreamFreshness[] {
  const sweepsOf = sqlite.prepare(
    `SELECT started_at, ended_at FROM sync_runs
     WHERE stream = ? AND kind IN ('sweep', 'reference') AND outcome = 'success' AND ended_at IS NOT NULL
       AND (details IS NULL OR json_extract(details, '$.capped') IS NULL)
     ORDER BY id DESC LIMIT ${FRESHNESS_SWEEPS}`,
  )
  const reconciledOf = sqlite
    .prepare(
      `SELECT ended_at FROM sync_runs WHERE stream = ? AND kind = 'reconcile' AND outcome = 'success' AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1`,
    )
    .pluck()
  return streams.map((stream) => {
    const sweeps = (sweepsOf.all(stream) as { started_at: string; ended_at: string }[]).map((r) => ({
      startedAt: parseInstant(r.started_at),
      endedAt: parseInstant(r.ended_at),
    }))
    const reconciled = reconciledOf.get(stream) as string | undefined
    return {
      stream,
      lastSweptAt: sweeps[0]?.endedAt ?? null,
      lastReconciledAt: reconciled === undefined ? null : parseInstant(reconciled),
      stalenessSeconds: expectedStalenessSeconds(sweeps, now),
    }
  })
}
