// What the engine needs to run a stream: the mirror, the upstream, the clock and a few options.
import type { Logger } from '../log/logger.js'
import type { Mirror } from '../store/sqlite/mirror-database.js'
import type { RunKind, SyncStateStore } from '../store/repositories/sync-state.js'
import type { Upstream } from './counting-source.js'
import type { ProgressSink } from './progress.js'

export interface SyncOptions {
  /** Subtracted from a stored cursor (guards against upstream commit lag). */
  lookbackMs: number
  pageSize: number
  /** Largest share of a table one reconciliation may mark deleted. */
  maxDeleteShare: number
}

export interface SyncContext {
  mirror: Mirror
  state: SyncStateStore
  upstream: Upstream
  logger: Logger
  now: () => number
  options: SyncOptions
  progress?: ProgressSink | undefined
  /** Requests per minute this context's requests may start at now (the governor's effective limit, or a share of it), for estimates. */
  budgetPerMinute?: (() => number) | undefined
  signal?: AbortSignal | undefined
}

export interface RunResult {
  stream: string
  /** As recorded in sync_runs and the logs (`reference`: a snapshot of reference data or account metadata). */
  kind: RunKind
  /**
   * `interrupted`: stopped by the caller's signal (SIGTERM); it resumes from its checkpoint.
   * `skipped`: not started, because an earlier run of the batch showed it could not succeed (the
   * API key rejected); nothing is recorded for it in sync_runs.
   */
  outcome: 'success' | 'error' | 'guarded' | 'interrupted' | 'skipped'
  /** Rows the run changed in the mirror (inserted, updated or marked deleted). */
  rows: number
  requests: number
  durationMs: number
  /** Clock ms the run ended (tracked runs), so a batch's observer can tell each run's own end. */
  endedAt?: number
  error?: string
  /** The failure's `code` (API_UNAUTHORIZED, API_FORBIDDEN, NETWORK_ERROR, ...), when it had one. */
  errorCode?: string
  details?: Record<string, unknown>
}
