// The arithmetic of a backfill estimate (docs/sweeping.md, Progress), shared by the sweep's live line
// (src/sync/progress.ts) and the status report (src/store/read-models/status-report.ts), which reads the figures a
// running sweep stored in its run's row. Pure.

/** What is left of a backfill, over every stream it walks. */
export interface BackfillEstimate {
  /** Rows still to read in the streams whose size is known. */
  rowsRemaining: number
  /** Requests they take: per stream, its rows by the page size, rounded up. */
  requestsRemaining: number
  /** Seconds those requests take at `budgetPerMinute`, rounded up; null when there is no budget to divide by. */
  secondsRemaining: number | null
  budgetPerMinute: number | null
  /** Streams still to walk whose size is not known yet (not started): the figures leave them out. */
  sizeUnknown: string[]
}

/** Requests to read `rows` rows at `pageSize` rows a page. */
export function requestsFor(rows: number, pageSize: number): number {
  return Math.ceil(Math.max(0, rows) / Math.max(1, pageSize))
}

/** Seconds `requests` take at `perMinute` starts a minute, rounded up; null without a budget. */
export function secondsAt(requests: number, perMinute: number | null): number | null {
  if (perMinute === null || !(perMinute > 0)) return null
  return Math.ceil((requests / perMinute) * 60)
}

/**
 * The overall estimate. Each stream under way or planned comes with what is left of it (rows, and
 * the requests they take), or null when its size is not known yet. Requests are summed per stream,
 * because each stream's last page is a request of its own.
 */
export function estimateBackfill(
  streams: readonly { stream: string; left: { rows: number; requests: number } | null }[],
  budgetPerMinute: number | null,
): BackfillEstimate {
  let rows = 0
  let requests = 0
  const sizeUnknown: string[] = []
  for (const s of streams) {
    if (s.left === null) sizeUnknown.push(s.stream)
    else {
      rows += Math.max(0, s.left.rows)
      requests += Math.max(0, s.left.requests)
    }
  }
  return {
    rowsRemaining: rows,
    requestsRemaining: requests,
    secondsRemaining: secondsAt(requests, budgetPerMinute),
    budgetPerMinute,
    sizeUnknown,
  }
}

/**
 * `~4,800 rows, ~48 requests, ~48s at 60 requests/min (+ jobs: size not known yet)`; only the
 * streams whose size is not known yet when nothing known is left.
 */
export function formatEstimate(e: BackfillEstimate): string {
  const unknown = `${e.sizeUnknown.join(', ')}: size not known yet`
  if (e.rowsRemaining === 0 && e.requestsRemaining === 0 && e.sizeUnknown.length > 0) return unknown
  const time =
    e.secondsRemaining === null || e.budgetPerMinute === null
      ? 'time unknown (no budget known)'
      : `~${formatDuration(e.secondsRemaining)} at ${count(e.budgetPerMinute)} requests/min`
  const known = `~${plural(e.rowsRemaining, 'row')}, ~${plural(e.requestsRemaining, 'request')}, ${time}`
  return e.sizeUnknown.length === 0 ? known : `${known} (+ ${unknown})`
}

/** `5s`, `1m05s`, `1h02m`. */
export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = seconds % 60
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`
}

/** `1 request`, `1,200 requests`. */
export function plural(n: number, noun: string): string {
  return `${count(n)} ${noun}${n === 1 ? '' : 's'}`
}

/**
 * A count with thousands separators, the same in every locale (as en-US writes it). Whole numbers
 * without the locale machinery: its first use costs about 10 ms, and a command that prints one at start pays it.
 */
export function count(n: number): string {
  return Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',') : n.toLocaleString('en-US')
}
