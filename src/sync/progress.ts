// Progress of a sweep and the estimate of a backfill (docs/sweeping.md, Progress). On a terminal, one live
// line: the stream's rows read and rows changed, and while a backfill runs the overall estimate
// (rows and requests still to go, and the time they take at the current budget); otherwise the
// estimate is logged once when the batch knows its sizes, and a sweep's progress at most every
// `logEveryMs` while it runs (its end is the run's own `sweep finished`, tracked-run.ts). The
// arithmetic is pure and shared with `status`, which reads the same figures from the run's row.
import type { Logger } from '../log/logger.js'
import { count, estimateBackfill, formatEstimate, plural, requestsFor } from '../model/backfill-estimate.js'

export interface ProgressUpdate {
  stream: string
  /** Rows this run read from the upstream (each row once, however often the walk saw it). */
  rowsRead: number
  /** Rows this run changed in the mirror (inserted, updated or marked deleted). */
  rowsChanged: number
  /** Rows still to read, from the latest answer's `meta.total`; undefined when the upstream gave none. */
  rowsRemaining: number | undefined
  requests: number
  /** A walk from the start (no stored cursor, or `sync --full`). */
  backfill: boolean
  done: boolean
}

export interface ProgressSink {
  /** The streams a batch will walk from the start, before it begins, with the rows each has (undefined: not known). */
  plan?(backfills: readonly { stream: string; rowsRemaining: number | undefined }[]): void
  update(p: ProgressUpdate): void
}

export interface ProgressOptions {
  logger: Logger
  now: () => number
  /** Requests per minute the budget allows now, for the estimate. */
  budgetPerMinute: () => number
  pageSize: number
  tty?: NodeJS.WritableStream | undefined
  logEveryMs?: number
}

export function createProgress(options: ProgressOptions): ProgressSink {
  const lastLog = new Map<string, number>()
  const every = options.logEveryMs ?? 10_000
  // The backfills of this batch: planned (size unknown until their first page), under way, done.
  const backfills = new Map<string, number | undefined>()
  const estimate = () =>
    estimateBackfill(
      [...backfills].map(([stream, rows]) => ({
        stream,
        left: rows === undefined ? null : { rows, requests: requestsFor(rows, options.pageSize) },
      })),
      options.budgetPerMinute(),
    )
  return {
    plan(streams) {
      for (const s of streams) backfills.set(s.stream, s.rowsRemaining)
      const e = estimate()
      if (options.tty === undefined && (e.rowsRemaining > 0 || e.sizeUnknown.length > 0))
        options.logger.info({ backfill: e }, `backfill: ${formatEstimate(e)}`)
    },
    update(p) {
      if (p.backfill) backfills.set(p.stream, p.done ? 0 : p.rowsRemaining)
      const overall = backfills.size > 0 ? estimate() : undefined
      const left = overall === undefined || (overall.rowsRemaining === 0 && overall.sizeUnknown.length === 0) ? undefined : overall
      if (options.tty !== undefined) {
        const head = `${p.stream}: ${plural(p.rowsRead, 'row')} read, ${count(p.rowsChanged)} changed, ${plural(p.requests, 'request')}`
        const tail = p.done ? ' (done)' : ''
        const rest = left === undefined ? '' : ` | backfill left: ${formatEstimate(left)}`
        options.tty.write(`\r\x1b[2K${head}${tail}${rest}${p.done ? '\n' : ''}`)
        return
      }
      // From the stream's first page on, a line every `every` ms while it runs; none at its end.
      const t = options.now()
      const last = lastLog.get(p.stream)
      if (p.done || last === undefined || t - last < every) {
        if (p.done) lastLog.delete(p.stream)
        else if (last === undefined) lastLog.set(p.stream, t)
        return
      }
      lastLog.set(p.stream, t)
      options.logger.info(
        {
          stream: p.stream,
          rowsRead: p.rowsRead,
          rowsChanged: p.rowsChanged,
          rowsRemaining: p.rowsRemaining,
          requests: p.requests,
          ...(left === undefined ? {} : { backfill: left }),
        },
        'sweep progress',
      )
    },
  }
}
