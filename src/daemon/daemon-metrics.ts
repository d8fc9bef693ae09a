// One account's part of the daemon's /metrics, in Prometheus text through prom-client (one registry
// per account, each series labelled `account`, no global default registry; process-metrics.ts
// serves them together). Counters that live elsewhere (the governor's window, the webhook
// path's plain-number counters) are read when scraped; the rest is observed as it happens.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { ResponseEvent } from '../api/api-client.js'
import type { GovernorState } from '../api/governor/index.js'
import type { CheckpointStats } from '../store/sqlite/background-checkpoints.js'
import type { RetentionCounts } from '../store/repositories/retention.js'
import type { StreamState } from '../store/repositories/sync-state.js'
import type { StreamFreshness } from '../store/read-models/stream-freshness.js'
import type { RunResult } from '../sync/sync-context.js'
import { parseInstant } from '../model/timestamps.js'
import { mirroredCounter } from './mirrored-counter.js'
import { systemClock } from '../model/clock.js'

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
}

export class DaemonMetrics {
  readonly registry = new Registry()
  readonly #requests
  readonly #rateLimited
  readonly #retries
  readonly #rows
  readonly #runs
  readonly #durations
  readonly #lastSuccess
  readonly #lastReconcile
  readonly #notConnected
  readonly #retention
  readonly #now: () => number

  constructor(sources: MetricSources) {
    this.#now = sources.now ?? (() => systemClock.now())
    if (sources.account !== undefined) this.registry.setDefaultLabels({ account: sources.account })
    const registers = [this.registry]
    this.#requests = new Counter({
      name: 'fsm_api_requests_total',
      help: 'Upstream answers by route and HTTP status (0: failed below HTTP), every attempt counted',
      labelNames: ['route', 'status'],
      registers,
    })
    this.#rateLimited = new Counter({ name: 'fsm_api_rate_limited_total', help: 'Upstream 429 answers', labelNames: ['route'], registers })
    this.#retries = new Counter({
      name: 'fsm_api_retries_total',
      help: 'Upstream attempts after the first of a request',
      labelNames: ['route'],
      registers,
    })
    this.#rows = new Counter({
      name: 'fsm_rows_written_total',
      help: 'Rows a run changed in the mirror, by stream and kind',
      labelNames: ['stream', 'kind'],
      registers,
    })
    this.#runs = new Counter({
      name: 'fsm_runs_total',
      help: 'Finished runs by stream, kind and outcome',
      labelNames: ['stream', 'kind', 'outcome'],
      registers,
    })
    // 12 series per stream and kind (9 fsm_run_duration_seconds_bucket, +Inf, sum, count): most of an
    // account's series (docs/metrics.md, Series per account).
    this.#durations = new Histogram({
      name: 'fsm_run_duration_seconds',
      help: 'Duration of sweeps, reconciliations and triggers',
      labelNames: ['stream', 'kind'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
      registers,
    })
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
    const freshness = sources.freshness
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
    const sweepShare = sources.sweepShare
    if (sweepShare !== undefined) {
      new Gauge({
        name: 'fsm_sweep_budget_limit',
        help: 'Requests per sliding minute the continuous sweeps may start now (sync.budgetShare of the effective limit)',
        registers,
        collect() {
          this.set(sweepShare().limit)
        },
      })
      new Gauge({
        name: 'fsm_sweep_budget_used',
        help: 'Requests the continuous sweeps started in the last minute',
        registers,
        collect() {
          this.set(sweepShare().used)
        },
      })
    }
    this.#notConnected = new Counter({
      name: 'fsm_integration_not_connected_total',
      help: 'Triggers refused with INTEGRATION_NOT_CONNECTED',
      labelNames: ['integration'],
      registers,
    })
    this.#retention = new Counter({
      name: 'fsm_retention_deleted_rows_total',
      help: 'Rows removed by retention passes, by table (webhook_inbox_bodies: bodies of applied deliveries dropped, their ids kept)',
      labelNames: ['table'],
      registers,
    })
    const budget = (name: string, help: string, pick: (s: GovernorState) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(pick(sources.governor()))
        },
      })
    budget('fsm_request_budget_limit', 'Configured requests per sliding minute (FSM_RATE_LIMIT)', (s) => s.limit)
    budget(
      'fsm_request_budget_effective_limit',
      'Requests per minute the governor allows now (adapted to the rate-limit headers)',
      (s) => s.effectiveLimit,
    )
    budget('fsm_request_budget_used', 'Requests started in the last 60 seconds', (s) => s.sentLastMinute)
    budget('fsm_requests_in_flight', 'Upstream requests in flight', (s) => s.inFlight)
    budget('fsm_request_budget_paused', '1 while a 429 pauses every request', (s) => (s.pausedUntil === null ? 0 : 1))
    const webhookCounters = sources.webhookCounters
    if (webhookCounters !== undefined) {
      for (const key of Object.keys(webhookCounters())) {
        mirroredCounter(registers, `fsm_${key}`, `Webhook path counter ${key}`, () => webhookCounters()[key] ?? 0)
      }
    }
    const backlog = sources.webhookBacklog
    if (backlog !== undefined)
      new Gauge({
        name: 'fsm_webhook_inbox_backlog',
        help: 'Stored deliveries not applied yet',
        registers,
        collect() {
          this.set(backlog())
        },
      })
    const checkpoints = sources.checkpoints
    if (checkpoints !== undefined) {
      const counter = (name: string, help: string, pick: (s: CheckpointStats) => number) =>
        mirroredCounter(registers, name, help, () => pick(checkpoints()))
      counter('fsm_mirror_checkpoint_passes_total', 'Background checkpoint passes (worker thread)', (s) => s.passes)
      counter('fsm_mirror_checkpoint_errors_total', 'Background checkpoint passes that failed', (s) => s.errors)
      counter(
        'fsm_mirror_checkpoint_frames_total',
        "Log frames copied into the mirror file, read by the background checkpoints (includes the writer's backstop checkpoints)",
        (s) => s.copiedFrames,
      )
      new Gauge({
        name: 'fsm_mirror_wal_frames',
        help: "Frames in the mirror's write-ahead log after the last background checkpoint",
        registers,
        collect() {
          this.set(checkpoints().logFrames)
        },
      })
    }
  }

  /** For ApiClient's `onResponse`. */
  readonly onResponse = (e: ResponseEvent): void => {
    this.#requests.inc({ route: e.route, status: String(e.status) })
    if (e.status === 429) this.#rateLimited.inc({ route: e.route })
    if (e.attempt > 1) this.#retries.inc({ route: e.route })
  }

  /** Seeds the last-success gauge from what earlier processes recorded. */
  seedLastSuccess(states: readonly StreamState[]): void {
    for (const s of states) if (s.lastSuccessAt !== null) this.#lastSuccess.set({ stream: s.stream }, parseInstant(s.lastSuccessAt) / 1000)
  }

  /** Seeds both last-success gauges from the runs earlier processes recorded (store/stream-freshness.ts). */
  seedFreshness(streams: readonly StreamFreshness[]): void {
    for (const f of streams) {
      if (f.lastSweptAt !== null) this.#lastSuccess.set({ stream: f.stream }, f.lastSweptAt / 1000)
      if (f.lastReconciledAt !== null) this.#lastReconcile.set({ stream: f.stream }, f.lastReconciledAt / 1000)
    }
  }

  /** A finished run; `at` defaults to the run's own end (a batch is observed after its last run). */
  observeRun(r: RunResult, kind: string = r.kind, at: number = r.endedAt ?? this.#now()): void {
    const labels = { stream: r.stream, kind }
    this.#rows.inc(labels, r.rows)
    this.#runs.inc({ ...labels, outcome: r.outcome })
    this.#durations.observe(labels, r.durationMs / 1000)
    if (r.outcome !== 'success') return
    if (r.kind === 'reconcile') this.#lastReconcile.set({ stream: r.stream }, at / 1000)
    else this.#lastSuccess.set({ stream: r.stream }, at / 1000)
  }

  retentionRemoved(counts: RetentionCounts): void {
    for (const [table, n] of Object.entries(counts)) this.#retention.inc({ table }, n)
  }

  integrationNotConnected(integration: string): void {
    this.#notConnected.inc({ integration })
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}
