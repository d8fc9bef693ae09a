// What `fsm-sync status` shows, read from the mirror alone (it may run beside the daemon).
import { quoteIdentifier } from '../../model/sql-names.js'
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { SyncStateTable } from '../sqlite/mirror-schema.js'
import { streamFreshness } from './stream-freshness.js'
import { estimateBackfill, type BackfillEstimate } from '../../model/backfill-estimate.js'
import { STALE_AFTER_MS } from '../repositories/owner-liveness.js'
import { RunHistory } from './run-history.js'
import { RunOwnerStore } from '../repositories/run-owners.js'
import { readRunProgress, type RunProgress } from '../repositories/sync-state.js'
import { parseInstant } from '../../model/timestamps.js'
import { inboxCounts } from '../repositories/webhook-inbox-store.js'
import { destinationLags, type ConsumerLag } from '../repositories/change-log-consumers.js'

/** Which table each stream's rows are counted in by `status` (src/cli/status-streams.ts derives it from the registry). */
export interface StatusStreams {
  /** Stream → its table; `tombstones: false` for a feed, whose rows are never deleted. */
  readonly tables: ReadonlyMap<string, { readonly table: string; readonly tombstones: boolean }>
  /** Streams listed even before their first run. */
  readonly always: readonly string[]
  /** `<stream>:<slug>` streams (one custom object each), counted by slug in `table`. */
  readonly perObject: { readonly stream: string; readonly table: string; readonly scope: string }
}

export interface StreamStatus {
  stream: string
  /** The table its rows are counted in (custom objects: `custom_records` of that slug). */
  table: string | null
  cursor: string | null
  lastSuccessAt: string | null
  lastError: string | null
  lastErrorAt: string | null
  rows: number | null
  deleted: number | null
  /** Seconds since the last success, at the time of the report. */
  lagSeconds: number | null
  /** When its last successful sweep (or reference read) ended: the mirror holds the stream as of then. */
  lastSweptAt: string | null
  /** Expected seconds a change made without a webhook takes to reach the mirror (store/stream-freshness.ts). */
  stalenessSeconds: number | null
}

/** A run not ended yet, and what it stored of its progress (record sweeps: see sync-state.ts, RunProgress). */
export interface RunningStatus {
  id: number
  stream: string
  kind: string
  startedAt: string
  runningSeconds: number
  progress: RunProgress | null
  /** Seconds since its process last said it lives (run_owners), null when none is recorded. */
  ownerSilentSeconds: number | null
  /** No heartbeat for over a minute (or no owner): the process is gone, and the next sync or daemon resumes the stream. */
  ownerGone: boolean
}

export interface StatusReport {
  streams: StreamStatus[]
  /** Runs not ended yet, oldest first. */
  running: RunningStatus[]
  /**
   * What is left of the backfills under way (record sweeps walking from the start whose process
   * lives), from what each stored with its last page; null when none runs.
   */
  backfill: (BackfillEstimate & { streams: string[] }) | null
  /** Schedules switched off ("off") in the configuration the report was made with. */
  schedulesOff?: string[]
  /** Requests runs recorded as spent in the last 60 seconds (runs still going count at the end). */
  requestsLastMinute: number
  webhookInbox: { backlog: number; failed: number; skipped: number } | null
  /**
   * Every destination registered on the mirror, as it last recorded itself there (the one that moved
   * or failed last first): whatever process replicates, and whether or not this one has its URL.
   */
  destinations: ConsumerLag[]
}

type StateRow = Pick<SyncStateTable, 'stream' | 'cursor' | 'last_success_at' | 'last_error' | 'last_error_at'>

interface Counts {
  live: number
  deleted: number
}

export function statusReport(sqlite: Sqlite, now: number, known: StatusStreams): StatusReport {
  // Plain statements throughout: a handful of reads does not need the query builder loaded (typed-query.ts).
  const states = sqlite
    .prepare(`SELECT stream, cursor, last_success_at, last_error, last_error_at FROM sync_state ORDER BY stream`)
    .all() as StateRow[]
  const tables = tableNames(sqlite)
  // Custom-object records per slug in one pass, rather than a count per object.
  const objectCounts = new Map<string, Counts>()
  if (tables.has(known.perObject.table)) {
    // The slug (TEXT) and two integer counts, named as Counts names them.
    const perSlug = sqlite
      .prepare(
        `SELECT slug, count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM custom_records GROUP BY slug`,
      )
      .all() as (Counts & { slug: string })[]
    for (const r of perSlug) objectCounts.set(r.slug, r)
  }
  const countsOf = (stream: string): { table: string; counts: Counts } | undefined => {
    const { perObject } = known
    if (stream.startsWith(`${perObject.stream}:`)) {
      const slug = stream.slice(perObject.stream.length + 1)
      return { table: perObject.table, counts: objectCounts.get(slug) ?? { live: 0, deleted: 0 } }
    }
    const of = known.tables.get(stream)
    if (of === undefined || !tables.has(of.table)) return undefined
    // A feed's rows are never deleted: they have no deleted_at to split on.
    return { table: of.table, counts: of.tombstones ? liveAndDeleted(sqlite, of.table) : { live: countRows(sqlite, of.table), deleted: 0 } }
  }
  const names = [...new Set([...known.always, ...states.map((s) => s.stream)])].sort()
  const freshness = new Map(streamFreshness(sqlite, names, now).map((f) => [f.stream, f]))
  const streams = names.map((stream): StreamStatus => {
    const s = states.find((x) => x.stream === stream)
    const fresh = freshness.get(stream)
    const counted = countsOf(stream)
    const success = s?.last_success_at ?? null
    return {
      stream,
      table: counted?.table ?? null,
      cursor: s?.cursor ?? null,
      lastSuccessAt: success,
      lastError: s?.last_error ?? null,
      lastErrorAt: s?.last_error_at ?? null,
      rows: counted?.counts.live ?? null,
      deleted: counted?.counts.deleted ?? null,
      lagSeconds: success === null ? null : Math.max(0, Math.round((now - parseInstant(success)) / 1000)),
      lastSweptAt: fresh?.lastSweptAt == null ? null : new Date(fresh.lastSweptAt).toISOString(),
      stalenessSeconds: fresh?.stalenessSeconds == null ? null : Math.round(fresh.stalenessSeconds * 10) / 10,
    }
  })
  const history = new RunHistory(sqlite)
  const requestsLastMinute = history.requestsSince(new Date(now - 60_000).toISOString())
  const webhookInbox = tables.has('webhook_inbox') ? inboxCounts(sqlite) : null
  const running = runningStatus(sqlite, history, tables.has('run_owners'), now)
  // A mirror from before change_log_consumers, opened read-only, has no such table yet.
  const destinations = tables.has('change_log_consumers') ? destinationLags(sqlite, now) : []
  return { streams, running, backfill: backfillLeft(running), requestsLastMinute, webhookInbox, destinations }
}

function runningStatus(sqlite: Sqlite, history: RunHistory, hasOwners: boolean, now: number): RunningStatus[] {
  const heartbeats = new Map(hasOwners ? new RunOwnerStore(sqlite).all().map((o) => [o.id, parseInstant(o.heartbeatAt)]) : [])
  return history.running({ owners: hasOwners }).map((r) => {
    const beat = r.ownerId === null ? undefined : heartbeats.get(r.ownerId)
    const silentMs = beat === undefined ? undefined : Math.max(0, now - beat)
    return {
      id: r.id,
      stream: r.stream,
      kind: r.kind,
      startedAt: r.startedAt,
      runningSeconds: Math.max(0, Math.round((now - parseInstant(r.startedAt)) / 1000)),
      progress: readRunProgress(r.details) ?? null,
      ownerSilentSeconds: silentMs === undefined ? null : Math.round(silentMs / 1000),
      ownerGone: silentMs === undefined || silentMs > STALE_AFTER_MS,
    }
  })
}

/** The overall estimate over the backfills under way, at the largest budget one of them recorded (they share the key's). */
function backfillLeft(running: readonly RunningStatus[]): StatusReport['backfill'] {
  const backfills = running.filter((r) => !r.ownerGone && r.progress?.backfill === true)
  if (backfills.length === 0) return null
  const budgets = backfills.map((r) => r.progress?.budgetPerMinute).filter((b): b is number => typeof b === 'number')
  const estimate = estimateBackfill(
    backfills.map((r) => {
      const p = r.progress
      const left = p?.rowsRemaining == null || p.requestsRemaining == null ? null : { rows: p.rowsRemaining, requests: p.requestsRemaining }
      return { stream: r.stream, left }
    }),
    budgets.length === 0 ? null : Math.max(...budgets),
  )
  return { ...estimate, streams: backfills.map((r) => r.stream) }
}

function tableNames(sqlite: Sqlite): Set<string> {
  // sqlite_master.name is TEXT.
  return new Set(sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[])
}

/** Rows of a table named at run time (a stream's declared table). */
function countRows(sqlite: Sqlite, table: string): number {
  // count(*) is an integer.
  return sqlite
    .prepare(`SELECT count(*) FROM ${quoteIdentifier(table)}`)
    .pluck()
    .get() as number
}

/** Live and deleted rows of a record table named at run time (a stream's declared table), in one pass. */
function liveAndDeleted(sqlite: Sqlite, table: string): Counts {
  // Two integer counts, named as Counts names them.
  return sqlite
    .prepare(
      `SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM ${quoteIdentifier(table)}`,
    )
    .get() as Counts
}

/** What a line per account adds to a report (`fsm-sync accounts`, `status` over several accounts). */
export interface AccountActivity {
  /** Request starts of every process on the mirror in the last 60 s (the request ledger); null on a mirror without one. */
  requestsLastMinute: number | null
  /** The sweep or reference read that ended last. */
  lastSweep: { stream: string; endedAt: string; outcome: string; error: string | null } | null
  /** When the newest webhook delivery was received; null when none is kept. */
  lastDeliveryAt: string | null
}

export function accountActivity(sqlite: Sqlite, now: number): AccountActivity {
  const tables = tableNames(sqlite)
  // count(*) is an integer; at_ms is INTEGER (request-ledger.ts).
  const requestsLastMinute = tables.has('request_starts')
    ? (sqlite
        .prepare(`SELECT count(*) FROM request_starts WHERE at_ms > ?`)
        .pluck()
        .get(now - 60_000) as number)
    : null
  // Four columns as the row type names them; ended_at is not null by the WHERE.
  const sweep = sqlite
    .prepare(
      `SELECT stream, ended_at AS endedAt, outcome, error FROM sync_runs
       WHERE kind IN ('sweep', 'reference') AND ended_at IS NOT NULL ORDER BY id DESC LIMIT 1`,
    )
    .get() as AccountActivity['lastSweep'] | undefined
  // received_at is TEXT NOT NULL; max() over no rows is NULL.
  const lastDeliveryAt = tables.has('webhook_inbox')
    ? (sqlite.prepare(`SELECT max(received_at) FROM webhook_inbox`).pluck().get() as string | null)
    : null
  return { requestsLastMinute, lastSweep: sweep ?? null, lastDeliveryAt }
}
