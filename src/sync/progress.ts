// Progress of a long backfill: on a terminal a live line per stream (rows done / total, requests,
// ETA from the request budget); otherwise a log event at most every `logEveryMs`.
import type { Logger } from '../log/logger.js'

export interface ProgressUpdate {
  stream: string
  rows: number
  /** Rows still to read when the run started (the first page's meta.total), when known. */
  total: number | undefined
  requests: number
  done: boolean
}

export interface ProgressSink {
  update(p: ProgressUpdate): void
}

export interface ProgressOptions {
  logger: Logger
  now: () => number
  /** Requests per minute the governor allows, for the ETA. */
  budgetPerMinute: () => number
  pageSize: number
  tty?: NodeJS.WritableStream | undefined
  logEveryMs?: number
}

export function createProgress(options: ProgressOptions): ProgressSink {
  const lastLog = new Map<string, number>()
  const every = options.logEveryMs ?? 10_000
  return {
    update(p) {
      const eta = etaSeconds(p, options.pageSize, options.budgetPerMinute())
      if (options.tty !== undefined) {
        const total = p.total === undefined ? '?' : String(p.total)
        const tail = p.done ? 'done' : eta === undefined ? '' : `ETA ${formatDuration(eta)}`
        options.tty.write(`\r\x1b[2K${p.stream}: ${p.rows}/${total} rows, ${p.requests} requests ${tail}${p.done ? '\n' : ''}`)
        return
      }
      const t = options.now()
      if (!p.done && t - (lastLog.get(p.stream) ?? 0) < every) return
      lastLog.set(p.stream, t)
      options.logger.info(
        { stream: p.stream, rows: p.rows, total: p.total, requests: p.requests, etaSeconds: eta },
        p.done ? 'sweep finished' : 'sweep progress',
      )
    },
  }
}

/** Seconds left at the budget's pace, from the rows still to read. Pure. */
export function etaSeconds(p: Pick<ProgressUpdate, 'rows' | 'total'>, pageSize: number, perMinute: number): number | undefined {
  if (p.total === undefined || perMinute <= 0) return undefined
  const pages = Math.ceil(Math.max(0, p.total - p.rows) / pageSize)
  return Math.round((pages / perMinute) * 60)
}

export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = seconds % 60
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`
}
