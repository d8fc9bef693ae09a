// One account's part of the daemon's /metrics, in Prometheus text through prom-client (one registry
// per account, each series labelled `account`, no global default registry; process-metrics.ts
// serves them together). Counters that live elsewhere (the governor's window, the webhook
// path's plain-number counters) are read when scraped; the rest is observed as it happens. With
// `metrics.perAccount` "summary" an account keeps a few series and adds the rest to the process's.
import { Gauge, Registry } from 'prom-client'
import type { ResponseEvent } from '../api/api-client.js'
import type { GovernorState } from '../api/governor/index.js'
import type { CheckpointStats } from '../store/sqlite/background-checkpoints.js'
import type { RetentionCounts } from '../store/repositories/retention.js'
import type { StreamState } from '../store/repositories/sync-state.js'
import type { StreamFreshness } from '../store/read-models/stream-freshness.js'
import type { RunResult } from '../sync/sync-context.js'
import { parseInstant } from '../model/timestamps.js'
import { mirroredCounter, mirroredLabelledCounter } from './mirrored-counter.js'
import { systemClock } from '../model/clock.js'
import { eventFamilies, type EventFamilies, type PerAccountMetrics, type SharedFamilies } from './account-metric-families.js'

export interface MetricSources {
  /** The account every series is labelled with (`account`); none for a registry of its own. */
  account?: string
  governor: () => GovernorState
  webhookCounters?: () => Record<string, number>
  webhookBacklog?: () => number
  checkpoints?: () => CheckpointStats
  /** The process's clock: when a run's success is recorded. Default: the system clock. */
  now?: () => number
  /** Each stream's freshness (store/stream-freshness.ts), read when scraped. */
  freshness?: () => readonly StreamFreshness[]
  /** The continuous sweeps' starts in the last window and their limit (sweep-loop.ts), when they run. */
  sweepShare?: () => { used: number; limit: number }
  /** Summary: the streams its staleness and last sweep are taken over (not reference data, read hourly). Default: all. */
  swept?: (stream: string) => boolean
  /** "summary": the few series of docs/metrics.md, the rest added to `shared` (the process's). Default "full". */
  perAccount?: PerAccountMetrics
  shared?: SharedFamilies
}

/** The webhook counters an account keeps in summary mode; the process sums the others. */
const SUMMARY_WEBHOOK_COUNTERS = new Set([
  'fsm_webhook_intake_stored_total',
  'fsm_webhook_intake_duplicate_total',
  'fsm_webhook_intake_unauthorized_total',
  'fsm_webhook_processor_applied_total',
  'fsm_webhook_processor_failed_total',
])

/** A reading shared by the collect() calls of one scrape (prom-client calls them all in one turn). */
export function perScrape<T>(read: () => T): () => T {
  let held: { value: T } | undefined
  return () => {
    if (held !== undefined) return held.value
    held = { value: read() }
    queueMicrotask(() => (held = undefined))
    return held.value
  }
}

export class DaemonMetrics {
  readonly registry = new Registry()
  readonly summary: boolean
  /** Where the summed families take this account's readings (summary mode). */
  readonly #shared: SharedFamilies | undefined
  readonly #events: EventFamilies
  readonly #lastSuccess: Gauge | undefined
  readonly #lastReconcile: Gauge | undefined
  /** Summary mode: runs by outcome, and the streams whose last run failed. */
  readonly #outcomes = new Map<string, number>()
  readonly #failing = new Set<string>()
  readonly #now: () => number

  constructor(sources: MetricSources) {
    this.#now = sources.now ?? (() => systemClock.now())
    if (sources.account !== undefined) this.registry.setDefaultLabels({ account: sources.account })
    const registers = [this.registry]
    const shared = sources.perAccount === 'summary' ? sources.shared : undefined
    if (sources.perAccount === 'summary' && shared === undefined) throw new Error('summary metrics need the process families')
    this.summary = shared !== undefined
    this.#shared = shared
    this.#events = shared?.events ?? eventFamilies(this.registry)
    const gauge = (name: string, help: string, read: () => number | undefined) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.reset()
          const v = read()
          if (v !== undefined) this.set(v)
        },
      })
    const freshness = sources.freshness === undefined ? undefined : perScrape(sources.freshness)
    if (shared === undefined) {
      this.#lastSuccess = new Gauge({
        name: 'fsm_last_success_timestamp_seconds',
        help: "Unix time each stream's own last successful sweep (or reference read, or trigger) ended; reconciliations are in fsm_last_reconcile_success_timestamp_seconds",
        labelNames: ['stream'],
        registers,
      })
      this.#lastReconcile = new Gauge({
        name: 'fsm_last_reconcile_success_timestamp_seconds',
        help: 'Unix time the last successful reconciliation of each stream ended',
        labelNames: ['stream'],
        registers,
      })
      if (freshness !== undefined)
        new Gauge({
          name: 'fsm_stream_staleness_seconds',
          help: 'Expected seconds between a change made upstream without a webhook and its arrival in the mirror (docs/sweeping.md, Continuous sweeping)',
          labelNames: ['stream'],
          registers,
          collect() {
            this.reset()
            for (const f of freshness())
              if (f.stalenessSeconds !== null) this.set({ stream: f.stream }, Math.round(f.stalenessSeconds * 10) / 10)
          },
        })
    } else {
      if (freshness !== undefined) {
        const swept = () => freshness().filter((f) => sources.swept?.(f.stream) ?? true)
        gauge(
          'fsm_account_staleness_seconds',
          "The largest expected staleness of the account's swept streams, record streams and custom objects (docs/sweeping.md, Continuous sweeping)",
          () => {
            const known = swept().flatMap((f) => (f.stalenessSeconds === null ? [] : [f.stalenessSeconds]))
            return known.length === 0 ? undefined : Math.round(Math.max(...known) * 10) / 10
          },
        )
        gauge(
          'fsm_account_last_sweep_timestamp_seconds',
          "Unix time of the oldest of its swept streams' last successful sweeps: every one swept once has been swept since",
          () => {
            const known = swept().flatMap((f) => (f.lastSweptAt === null ? [] : [f.lastSweptAt]))
            return known.length === 0 ? undefined : Math.min(...known) / 1000
          },
        )
      }
      const outcomes = this.#outcomes
      mirroredLabelledCounter(registers, 'fsm_account_runs_total', 'Finished runs of the account by outcome', ['outcome'], () =>
        [...outcomes].map(([outcome, n]) => [{ outcome }, n] as const),
      )
      gauge(
        'fsm_account_streams_failing',
        'Streams whose last run here failed (their last error is newer than their last success)',
        () => this.#failing.size,
      )
    }
    const sweepShare = sources.sweepShare
    if (sweepShare !== undefined) {
      gauge(
        'fsm_sweep_budget_limit',
        'Requests per sliding minute the continuous sweeps may start now (sync.budgetShare of the effective limit)',
        () => sweepShare().limit,
      )
      gauge('fsm_sweep_budget_used', 'Requests the continuous sweeps started in the last minute', () => sweepShare().used)
    }
    const budget = (name: string, help: string, pick: (s: GovernorState) => number) => gauge(name, help, () => pick(sources.governor()))
    budget('fsm_request_budget_limit', 'Configured requests per sliding minute (FSM_RATE_LIMIT)', (s) => s.limit)
    budget(
      'fsm_request_budget_effective_limit',
      'Requests per minute the governor allows now (adapted to the rate-limit headers)',
      (s) => s.effectiveLimit,
    )
    budget('fsm_request_budget_used', 'Requests started in the last 60 seconds', (s) => s.sentLastMinute)
    budget('fsm_requests_in_flight', 'Upstream requests in flight', (s) => s.inFlight)
    budget('fsm_request_budget_paused', '1 while a 429 pauses every request', (s) => (s.pausedUntil === null ? 0 : 1))
    // Read once a scrape: each reading builds the whole set, and the process's sums read it per family.
    const webhookCounters = sources.webhookCounters === undefined ? undefined : perScrape(sources.webhookCounters)
    if (webhookCounters !== undefined) {
      for (const key of Object.keys(webhookCounters())) {
        const read = () => webhookCounters()[key] ?? 0
        if (shared === undefined || SUMMARY_WEBHOOK_COUNTERS.has(`fsm_${key}`))
          mirroredCounter(registers, `fsm_${key}`, `Webhook path counter ${key}`, read)
        else shared.summed.add(this, 'counter', `fsm_${key}`, `Webhook path counter ${key}, summed over the accounts`, read)
      }
    }
    const backlog = sources.webhookBacklog
    if (backlog !== undefined) gauge('fsm_webhook_inbox_backlog', 'Stored deliveries not applied yet', backlog)
    const checkpoints = sources.checkpoints === undefined ? undefined : perScrape(sources.checkpoints)
    if (checkpoints !== undefined) {
      const counter = (name: string, help: string, pick: (s: CheckpointStats) => number) =>
        shared === undefined
          ? mirroredCounter(registers, name, help, () => pick(checkpoints()))
          : shared.summed.add(this, 'counter', name, `${help}, summed over the accounts`, () => pick(checkpoints()))
      counter('fsm_mirror_checkpoint_passes_total', 'Background checkpoint passes (worker thread)', (s) => s.passes)
      counter('fsm_mirror_checkpoint_errors_total', 'Background checkpoint passes that failed', (s) => s.errors)
      counter(
        'fsm_mirror_checkpoint_frames_total',
        "Log frames copied into the mirror file, read by the background checkpoints (includes the writer's backstop checkpoints)",
        (s) => s.copiedFrames,
      )
      const walHelp = "Frames in the mirror's write-ahead log after the last background checkpoint"
      if (shared === undefined) gauge('fsm_mirror_wal_frames', walHelp, () => checkpoints().logFrames)
      else shared.summed.add(this, 'gauge', 'fsm_mirror_wal_frames', `${walHelp}, summed over the accounts`, () => checkpoints().logFrames)
    }
  }

  /** Summary mode: the account runs, its readings join the process's sums (not before: an open may fail). */
  attach(): void {
    this.#shared?.summed.attach(this)
  }

  /** Summary mode: the account leaves the process's sums (its counters' counts stay in them). */
  retire(): void {
    this.#shared?.summed.retire(this)
  }

  /** For ApiClient's `onResponse`. */
  readonly onResponse = (e: ResponseEvent): void => {
    this.#events.requests.inc({ route: e.route, status: String(e.status) })
    if (e.status === 429) this.#events.rateLimited.inc({ route: e.route })
    if (e.attempt > 1) this.#events.retries.inc({ route: e.route })
  }

  /** Seeds the last-success gauge from what earlier processes recorded. */
  seedLastSuccess(states: readonly StreamState[]): void {
    for (const s of states) if (s.lastSuccessAt !== null) this.#lastSuccess?.set({ stream: s.stream }, parseInstant(s.lastSuccessAt) / 1000)
  }

  /** Seeds both last-success gauges from the runs earlier processes recorded (store/stream-freshness.ts). */
  seedFreshness(streams: readonly StreamFreshness[]): void {
    for (const f of streams) {
      if (f.lastSweptAt !== null) this.#lastSuccess?.set({ stream: f.stream }, f.lastSweptAt / 1000)
      if (f.lastReconciledAt !== null) this.#lastReconcile?.set({ stream: f.stream }, f.lastReconciledAt / 1000)
    }
  }

  /** A finished run; `at` defaults to the run's own end (a batch is observed after its last run). */
  observeRun(r: RunResult, kind: string = r.kind, at: number = r.endedAt ?? this.#now()): void {
    const labels = { stream: r.stream, kind }
    this.#events.rows.inc(labels, r.rows)
    this.#events.runs.inc({ ...labels, outcome: r.outcome })
    this.#events.durations.observe(labels, r.durationMs / 1000)
    if (this.summary) {
      this.#outcomes.set(r.outcome, (this.#outcomes.get(r.outcome) ?? 0) + 1)
      if (r.outcome === 'error') this.#failing.add(r.stream)
      else if (r.outcome === 'success') this.#failing.delete(r.stream)
    }
    if (r.outcome !== 'success') return
    if (r.kind === 'reconcile') this.#lastReconcile?.set({ stream: r.stream }, at / 1000)
    else this.#lastSuccess?.set({ stream: r.stream }, at / 1000)
  }

  retentionRemoved(counts: RetentionCounts): void {
    for (const [table, n] of Object.entries(counts)) this.#events.retention.inc({ table }, n)
  }

  integrationNotConnected(integration: string): void {
    this.#events.notConnected.inc({ integration })
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}
