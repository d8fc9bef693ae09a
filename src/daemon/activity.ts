// What the daemon did between two moments, read from its own state: webhooks from its counters
// (stored, applied) and the inbox, runs from sync_runs, changes from change_log. `demo` prints one
// line of it every few seconds; nothing here runs or schedules work.
import type { Sqlite } from '../store/mirror-database.js'
import { streamFreshness } from '../store/stream-freshness.js'
import { RunHistory } from '../store/run-history.js'
import { inboxCounts } from '../store/webhook-inbox-store.js'
import type { WebhookMetrics } from '../webhooks/metrics.js'

export interface ActivityMark {
  /** Last sync_runs id already reported. */
  runId: number
  /** Last change_log seq already reported. */
  seq: number
  received: number
  applied: number
  /** Inbox rows whose apply failed (all time). */
  failed: number
}

export interface RunLine {
  stream: string
  kind: string
  outcome: string
  rows: number
  requests: number
  error: string | null
}

export interface Activity {
  /** Deliveries the intake stored (verified, deduplicated) and the processor applied, since the mark. */
  received: number
  applied: number
  /** Stored deliveries not applied yet (now), and those whose apply failed since the mark. */
  backlog: number
  failed: number
  /** Runs that finished since the mark. */
  runs: RunLine[]
  /** Rows the mirror changed since the mark (change_log entries). */
  changes: number
  /** Expected staleness of a change without a webhook, per stream asked for (store/stream-freshness.ts). */
  staleness?: { stream: string; seconds: number | null }[]
  next: ActivityMark
}

export function activityMark(sqlite: Sqlite, metrics: WebhookMetrics): ActivityMark {
  const history = new RunHistory(sqlite)
  return {
    runId: history.lastRunId(),
    seq: history.lastChangeSeq(),
    received: metrics.intake.stored,
    applied: metrics.processor.applied,
    failed: inboxCounts(sqlite).failed,
  }
}

/** Activity after `since`. Runs still going are left for the next call (they have no end yet). */
export function activitySince(
  sqlite: Sqlite,
  metrics: WebhookMetrics,
  since: ActivityMark,
  freshness?: { streams: readonly string[]; now: number },
): Activity {
  const history = new RunHistory(sqlite)
  const runs = history.finishedAfter(since.runId)
  // Stop before the first run still going, so that it is reported once, when it ends.
  const running = history.firstRunningAfter(since.runId)
  const done = running === undefined ? runs : runs.filter((r) => r.id < running)
  const seq = history.lastChangeSeq()
  const inbox = inboxCounts(sqlite)
  const next: ActivityMark = {
    runId: done.length > 0 ? done[done.length - 1]!.id : since.runId,
    seq,
    received: metrics.intake.stored,
    applied: metrics.processor.applied,
    failed: inbox.failed,
  }
  return {
    received: next.received - since.received,
    applied: next.applied - since.applied,
    backlog: inbox.backlog,
    failed: inbox.failed - since.failed,
    runs: done.map(({ stream, kind, outcome, rows, requests, error }) => ({ stream, kind, outcome, rows, requests, error })),
    changes: seq - since.seq,
    ...(freshness === undefined
      ? {}
      : {
          staleness: streamFreshness(sqlite, freshness.streams, freshness.now).map((f) => ({
            stream: f.stream,
            seconds: f.stalenessSeconds === null ? null : Math.round(f.stalenessSeconds),
          })),
        }),
    next,
  }
}

/**
 * One line: `webhooks +3 received, +3 applied; sweep: clients 2, jobs 1; 4 requests; mirror +6
 * changes; staleness without a webhook: clients 4 s, jobs 3 s`. Pure.
 */
export function formatActivity(a: Activity): string {
  const parts = [
    `webhooks +${a.received} received, +${a.applied} applied${a.backlog > 0 ? ` (${a.backlog} waiting)` : ''}${a.failed > 0 ? ` (${a.failed} could not be applied: see webhook_inbox.error)` : ''}`,
  ]
  const byKind = new Map<string, RunLine[]>()
  for (const r of a.runs) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r])
  for (const [kind, runs] of byKind) {
    const changed = runs.filter((r) => r.rows > 0).map((r) => `${r.stream} ${r.rows}`)
    const failed = runs
      .filter((r) => r.outcome !== 'success')
      .map((r) => `${r.stream} ${r.outcome}${r.error === null ? '' : ` (${r.error.slice(0, 80)})`}`)
    const what = [...changed, ...failed]
    parts.push(
      `${kind} of ${runs.length} stream${runs.length === 1 ? '' : 's'}: ${what.length === 0 ? 'no changes' : what.join(', ')}; ${runs.reduce((n, r) => n + r.requests, 0)} requests`,
    )
  }
  parts.push(`mirror +${a.changes} changes`)
  if (a.staleness !== undefined && a.staleness.length > 0)
    parts.push(
      `staleness without a webhook: ${a.staleness.map((s) => `${s.stream} ${s.seconds === null ? '-' : `${s.seconds} s`}`).join(', ')}`,
    )
  return parts.join('; ')
}
