// The bookkeeping every run shares: a sync_runs row from start to end, the stream's last success or
// last error in sync_state, and one RunResult. Each kind of run supplies only its work. A run may
// write its row with its first commit instead of at its start (docs/sweeping.md, What a sweep
// costs): a quiet sweep then commits once, its row, cursor and outcome together.
import { isFenced } from '../api/governor/index.js'
import { isoNow } from '../model/timestamps.js'
import type { RunKind } from '../store/repositories/sync-state.js'
import { CountingSource } from './counting-source.js'
import { describeError, errorCodeOf } from './describe-error.js'
import type { RunResult, SyncContext } from './sync-context.js'

export interface RunOutcome {
  outcome?: 'success' | 'guarded'
  rows: number
  error?: string
  details?: Record<string, unknown>
}

export interface RunScope {
  source: CountingSource
  /**
   * The run's id in sync_runs. With `rowAtFirstCommit`, the first call writes the run's row: call
   * it inside the transaction of the run's first commit, which the row then joins.
   */
  runId: () => number
  /**
   * A write left for the run's next commit, made in the run's final transaction whatever its
   * outcome unless the work clears it first (a page that changed nothing leaves its cursor here).
   */
  deferred: (() => void) | undefined
  /**
   * Rows committed so far. Work that commits page by page adds to it after each commit, so a run
   * that is stopped or fails half-way still records the rows it really wrote.
   */
  committed: { rows: number }
}

export interface TrackedRunOptions {
  /** Requests are counted here (the custom-object runs share one so that discovery is charged once). */
  source?: CountingSource | undefined
  /**
   * Write the run's row with its first commit (`runId()`), or at its end when it commits nothing
   * before: a run killed before that leaves no row, and `status` shows it in progress only from
   * then. For runs whose work before their first commit is only reading (incremental sweeps).
   */
  rowAtFirstCommit?: boolean
}

/**
 * Runs `work` as one tracked run. Requests are counted on `options.source` (a fresh one unless
 * given). A thrown error ends the run as `error` with its message; it is logged, recorded and
 * returned, never rethrown.
 */
export async function trackedRun(
  ctx: SyncContext,
  kind: RunKind,
  stream: string,
  work: (scope: RunScope) => Promise<RunOutcome>,
  options: TrackedRunOptions = {},
): Promise<RunResult> {
  const started = ctx.now()
  const startedAt = isoNow(started)
  let id: number | undefined
  const runId = () => (id ??= ctx.state.startRun(kind, stream, startedAt))
  if (options.rowAtFirstCommit !== true) runId()
  const source = options.source ?? new CountingSource(ctx.upstream, ctx.now)
  // A shared source serves one run at a time: its requests are this run's from here on.
  source.who = `${kind} ${stream}`
  const before = source.requests
  const committed = { rows: 0 }
  const scope: RunScope = { source, runId, deferred: undefined, committed }
  let result: Omit<RunOutcome, 'outcome'> & { outcome: Exclude<RunResult['outcome'], 'skipped'>; errorCode?: string }
  try {
    const r = await work(scope)
    result = { ...r, outcome: r.outcome ?? 'success' }
  } catch (err) {
    if (ctx.signal?.aborted === true || isFenced(err)) {
      // Stopped on purpose (SIGTERM, Ctrl-C), or the account's lease passed to another replica
      // (FENCED, nothing sent): not a failure; the next run, here or there, resumes from the checkpoint.
      ctx.logger.info({ stream, kind, reason: describeError(err) }, `${kind} interrupted; it resumes from its checkpoint`)
      const fenced = isFenced(err) ? { errorCode: 'FENCED' } : {}
      result = { outcome: 'interrupted', rows: committed.rows, error: describeError(err), ...fenced }
    } else {
      ctx.logger.error({ err, stream, kind }, `${kind} failed`)
      // Pages committed before the failure stay committed: count them.
      const errorCode = errorCodeOf(err)
      result = { outcome: 'error', rows: committed.rows, error: describeError(err), ...(errorCode === undefined ? {} : { errorCode }) }
    }
  }
  // A first commit that failed took the run's row back with it: the row is written again at the end.
  if (result.outcome !== 'success' && id !== undefined && options.rowAtFirstCommit === true && !ctx.state.hasRun(id, stream, startedAt))
    id = undefined
  const end = ctx.now()
  const requests = source.requests - before
  ctx.mirror.sqlite.transaction(() => {
    const runId = scope.runId()
    scope.deferred?.()
    ctx.state.finishRun(
      runId,
      {
        outcome: result.outcome,
        rows: result.rows,
        requests,
        ...(result.error === undefined ? {} : { error: result.error }),
        details: result.details,
      },
      isoNow(end),
    )
    if (result.outcome === 'error') ctx.state.recordError(stream, runId, result.error ?? 'failed', isoNow(end))
    else if (result.outcome === 'success') ctx.state.recordSuccess(stream, runId, isoNow(end))
  })()
  if (result.outcome === 'guarded') ctx.logger.warn({ stream, kind, ...result.details }, result.error ?? 'guarded')
  else if (result.outcome === 'success')
    ctx.logger.info({ stream, kind, rows: result.rows, requests, durationMs: end - started }, `${kind} finished`)
  return {
    stream,
    kind,
    outcome: result.outcome,
    rows: result.rows,
    requests,
    durationMs: end - started,
    endedAt: end,
    ...(result.error === undefined ? {} : { error: result.error }),
    ...(result.errorCode === undefined ? {} : { errorCode: result.errorCode }),
    ...(result.details === undefined ? {} : { details: result.details }),
  }
}

/** The guard shared by every reconciliation: a share of the live rows, never more. */
export function deletionGuard(
  stream: string,
  candidates: number,
  liveCount: number,
  maxShare: number,
  /** Ids the reconciliation's walk checked, kept in the refused run's details. */
  walked: number,
): RunOutcome | undefined {
  const allowed = Math.floor(liveCount * maxShare)
  if (candidates <= allowed) return undefined
  return {
    outcome: 'guarded',
    rows: 0,
    error: `reconcile of ${stream} refused: ${candidates} of ${liveCount} live rows look deleted, more than the allowed ${Math.round(maxShare * 100)} % (${allowed}); nothing was marked. If this is real, raise reconcile.maxDeleteShare for one run.`,
    details: { walked, candidates, liveCount, allowed },
  }
}
