// What the daemon did between two moments, read from its own state: webhooks from its counters
// (stored, applied) and the inbox, runs from sync_runs, changes from change_log, and what waits for
// the request budget from the governor. `demo` prints one line of it every few seconds; nothing
// here runs or schedules work.
import type { BudgetWait } from '../api/governor/index.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { streamFreshness } from '../store/read-models/stream-freshness.js'
import { RunHistory } from '../store/read-models/run-history.js'
import { parseInstant } from '../model/timestamps.js'
import { inboxCounts } from '../store/repositories/webhook-inbox-store.js'
import type { WebhookMetrics } from '../webhooks/metrics.js'

export interface ActivityMark {
  /** Every run up to this id has been reported (or had ended before the first mark). */
  runId: number
  /** Runs above `runId` already reported: they ended while an older run was still going. */
  reported: readonly number[]
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

/** A run not ended yet, and how long it has waited for a start slot when it waits now. */
export interface RunningLine {
  stream: string
  kind: string
  seconds: number
  waitingSeconds: number | null
}

export interface Activity {
  /** Deliveries the intake stored (verified, deduplicated) and the processor applied, since the mark. */
  received: number
  applied: number
  /** Stored deliveries not applied yet (now), and those whose apply failed since the mark. */
  backlog: number
  failed: number
  /** Runs that finished since the mark, whatever runs are still going. */
  runs: RunLine[]
  /** Runs still going now for WAIT_SHOWN_MS or more, or waiting for the budget (when `options` were given). */
  running: RunningLine[]
  /** Requests waiting for the budget longer than WAIT_SHOWN_MS that no running run accounts for (webhook follow-ups, say). */
  waiting: { who: string; seconds: number }[]
  /** Rows the mirror changed since the mark (change_log entries). */
  changes: number
  /** Expected staleness of a change without a webhook, per stream asked for (store/stream-freshness.ts). */
  staleness?: { stream: string; seconds: number | null }[]
  next: ActivityMark
}

/** A wait for the budget shorter than this is the budget's ordinary pacing, and a run younger than this ordinary traffic: not shown. */
export const WAIT_SHOWN_MS = 3_000

export function activityMark(sqlite: Sqlite, metrics: WebhookMetrics): ActivityMark {
  const history = new RunHistory(sqlite)
  return {
    runId: history.lastRunId(),
    reported: [],
    seq: history.lastChangeSeq(),
    received: metrics.intake.stored,
    applied: metrics.processor.applied,
    failed: inboxCounts(sqlite).failed,
  }
}

export interface ActivityOptions {
  /** Clock ms of the report: runs still going and waits are shown as of then. */
  now: number
  /** Streams whose expected staleness to show. */
  streams?: readonly string[]
  /** The requests waiting for the budget now (the governor's and the sweeps' share's `waiting()`). */
  waits?: readonly BudgetWait[]
}

/**
 * Activity after `since`: every run that ended since, even while an older one is still going (a
 * trigger starved of budget must not hide the sweeps that finished after it), and, with `options`,
 * the runs still going and the requests waiting for the budget.
 */
export function activitySince(sqlite: Sqlite, metrics: WebhookMetrics, since: ActivityMark, options?: ActivityOptions): Activity {
  const history = new RunHistory(sqlite)
  // One read transaction: the runs still going and the runs ended agree with each other.
  const { oldestRunning, ended, running, seq, inbox } = sqlite.transaction(() => ({
    oldestRunning: history.firstRunningAfter(since.runId),
    ended: history.finishedAfter(since.runId),
    running: options === undefined ? [] : history.running({ owners: false }),
    seq: history.lastChangeSeq(),
    inbox: inboxCounts(sqlite),
  }))()
  const reported = new Set(since.reported)
  const fresh = ended.filter((r) => !reported.has(r.id))
  // Every run up to the oldest still going has ended: the mark moves there, and remembers the
  // ones above it that were reported.
  const upTo = oldestRunning === undefined ? Math.max(since.runId, ...ended.map((r) => r.id)) : oldestRunning - 1
  const next: ActivityMark = {
    runId: upTo,
    reported: ended.filter((r) => r.id > upTo).map((r) => r.id),
    seq,
    received: metrics.intake.stored,
    applied: metrics.processor.applied,
    failed: inbox.failed,
  }
  const now = options?.now ?? 0
  const waits = (options?.waits ?? []).filter((w) => now - w.since >= WAIT_SHOWN_MS)
  const waitOf = (who: string) => waits.find((w) => w.who === who)
  const runningLines = running.flatMap((r): RunningLine[] => {
    const wait = waitOf(`${r.kind} ${r.stream}`)
    const ms = Math.max(0, now - parseInstant(r.startedAt))
    // A run that began a moment ago is the ordinary traffic: shown once it goes on or waits.
    if (wait === undefined && ms < WAIT_SHOWN_MS) return []
    return [
      {
        stream: r.stream,
        kind: r.kind,
        seconds: Math.round(ms / 1000),
        waitingSeconds: wait === undefined ? null : Math.round((now - wait.since) / 1000),
      },
    ]
  })
  const ofRuns = new Set(running.map((r) => `${r.kind} ${r.stream}`))
  return {
    received: next.received - since.received,
    applied: next.applied - since.applied,
    backlog: inbox.backlog,
    failed: inbox.failed - since.failed,
    runs: fresh.map(({ stream, kind, outcome, rows, requests, error }) => ({ stream, kind, outcome, rows, requests, error })),
    running: runningLines,
    waiting: waits
      .filter((w) => w.who === undefined || !ofRuns.has(w.who))
      .map((w) => ({ who: w.who ?? `a ${w.priority} request`, seconds: Math.round((now - w.since) / 1000) })),
    changes: seq - since.seq,
    ...(options?.streams === undefined
      ? {}
      : {
          staleness: streamFreshness(sqlite, options.streams, now).map((f) => ({
            stream: f.stream,
            seconds: f.stalenessSeconds === null ? null : Math.round(f.stalenessSeconds),
          })),
        }),
    next,
  }
}

/** How a kind of run is named in the line. */
const KIND_NAMES: Record<string, string> = {
  sweep: 'sweeps',
  reconcile: 'reconciliations',
  reference: 'snapshots',
  trigger: 'triggers',
}

/**
 * One line, every number labelled: `webhooks: +3 received, +3 applied; sweeps: 2 finished, 2
 * requests, rows changed: clients 2, jobs 1; still going: trigger calendar-a for 48 s (waiting 45 s
 * for the request budget); mirror: +6 rows changed; staleness without a webhook: clients 4 s`. Pure.
 */
export function formatActivity(a: Activity): string {
  const webhooks = [`+${a.received} received`, `+${a.applied} applied`]
  if (a.backlog > 0) webhooks.push(`${a.backlog} waiting to be applied`)
  if (a.failed > 0) webhooks.push(`${a.failed} could not be applied (see webhook_inbox.error)`)
  const parts = [`webhooks: ${webhooks.join(', ')}`]
  const byKind = new Map<string, RunLine[]>()
  for (const r of a.runs) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r])
  for (const [kind, runs] of byKind) {
    const requests = runs.reduce((n, r) => n + r.requests, 0)
    const rows = new Map<string, number>()
    for (const r of runs) if (r.rows > 0) rows.set(r.stream, (rows.get(r.stream) ?? 0) + r.rows)
    const changed = rows.size === 0 ? 'no rows changed' : `rows changed: ${[...rows].map(([s, n]) => `${s} ${n}`).join(', ')}`
    const failed = runs
      .filter((r) => r.outcome !== 'success')
      .map((r) => `${r.stream} ${r.outcome}${r.error === null ? '' : ` (${r.error.slice(0, 80)})`}`)
    parts.push(
      `${KIND_NAMES[kind] ?? `${kind} runs`}: ${runs.length} finished, ${requests} request${requests === 1 ? '' : 's'}, ${changed}${failed.length === 0 ? '' : `; not successful: ${failed.join(', ')}`}`,
    )
  }
  if (a.running.length > 0)
    parts.push(
      `still going: ${a.running
        .map(
          (r) =>
            `${r.kind} ${r.stream} for ${r.seconds} s${r.waitingSeconds === null ? '' : ` (waiting ${r.waitingSeconds} s for the request budget)`}`,
        )
        .join(', ')}`,
    )
  if (a.waiting.length > 0) parts.push(`waiting for the request budget: ${a.waiting.map((w) => `${w.who} ${w.seconds} s`).join(', ')}`)
  parts.push(`mirror: +${a.changes} rows changed`)
  if (a.staleness !== undefined && a.staleness.length > 0)
    parts.push(
      `staleness without a webhook: ${a.staleness.map((s) => `${s.stream} ${s.seconds === null ? '-' : `${s.seconds} s`}`).join(', ')}`,
    )
  return parts.join('; ')
}
