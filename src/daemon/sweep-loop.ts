// Continuous sweeping (docs/sweeping.md, Continuous sweeping): the daemon sweeps the record streams and
// custom objects back to back, every request waiting in a share of the budget (BudgetShare,
// `sync.budgetShare` of the effective limit) before the governor. Which stream goes next is the
// planner's choice (sweep-planner.ts): streams that changed lately (the sweeps' own results and the
// webhook traffic) more often, quiet ones resting longer after each empty sweep, none later than
// `sync.maxSweepIntervalSeconds`. Each sweep takes the record-writing queue in turn with reconciliation and
// the failed-delivery sweeps (sync-jobs.ts), so a stream is never walked by two runs at once.
import { objectStream, parseObjectStream, type RecordStream } from '../model/streams.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import type { ApiClient } from '../api/api-client.js'
import type { Clock } from '../model/clock.js'
import { BudgetShare, type RequestGovernor } from '../api/governor/index.js'
import type { Query } from '../api/routes.js'
import type { Logger } from '../log/logger.js'
import type { SweepPlan } from '../store/repositories/takeover-state.js'
import { inboxEventsReader } from '../store/repositories/webhook-inbox-store.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { CountingSource, type Upstream } from '../sync/counting-source.js'
import { SCHEMA_MAX_AGE_MS } from '../sync/object-schemas.js'
import { RUNNERS } from '../sync/stream-runners.js'
import { KEY_REJECTED } from '../sync/sync-engine.js'
import type { Selection } from '../../connectors/selection.js'
import type { RunResult, SyncContext } from '../sync/sync-context.js'
import {
  ChangeRate,
  planNext,
  restAfterActivity,
  restAfterBackfill,
  restAfterSweep,
  retryDelayMs,
  type PlannedStream,
} from './sweep-planner.js'
import { parseInstant } from '../model/timestamps.js'

/**
 * Custom objects are discovered again this often (new objects, changed schemas): as often as a
 * stored schema goes stale (object-schemas.ts), so the schemas are checked every five minutes as
 * docs/sweeping.md promises; between two discoveries a sweep fetches a schema its records outgrew.
 */
export const DISCOVERY_EVERY_MS = SCHEMA_MAX_AGE_MS

/** Webhook deliveries wake a resting loop at most this often; those in between join the next wake. */
export const WAKE_EVERY_MS = 2_000

export interface SweepLoopOptions {
  /** The sweeps' context (mirror, state, logger, options); its upstream is replaced by the share's. */
  context: (signal: AbortSignal) => SyncContext
  client: Pick<ApiClient, 'get'>
  governor: RequestGovernor
  clock: Clock
  selection: Pick<Selection, 'records' | 'objects'>
  /** `sync.budgetShare`. */
  budgetShare: number
  /** `sync.maxSweepIntervalSeconds`, in ms. */
  maxIntervalMs: number
  /** The serial queue the record-writing jobs take in turn. */
  serialQueue: { run<T>(work: () => Promise<T>): Promise<T> }
  logger: Logger
  /** Told of every finished run (the daemon's metrics). */
  onRun?: (result: RunResult) => void
  /** Changes seen elsewhere since the last call (the webhook traffic), by stream: read before each plan. */
  hints?: () => ReadonlyMap<string, number>
  /** The schedule to go on with (a takeover: the previous owner's, docs/sharding.md), instead of sweeping every stream first. */
  resume?: SweepPlan
  /** Told the schedule after each sweep and discovery, for the mirror to keep (writeSweepPlan). */
  onPlan?: (plan: SweepPlan) => void
  /**
   * Runs a sweep's wait for its request pace, which touches no mirror, with the mirror's slot given
   * back (mirror-slots.ts, aside): the slot is taken again before the request starts.
   */
  aside?: <T>(wait: () => Promise<T>) => Promise<T>
}

interface UnitState {
  lastStartedAt: number | undefined
  rate: ChangeRate
  /** Mean requests per sweep, smoothed. */
  cost: number
  failures: number
  retryAt: number | undefined
  /** How long it rests after its last sweep began (sweep-planner.ts, restAfterSweep). */
  restMs: number
}

export class SweepLoop {
  readonly share: BudgetShare
  readonly #options: SweepLoopOptions
  readonly #controller = new AbortController()
  readonly #units = new Map<string, UnitState>()
  readonly #records: Map<string, RecordStream>
  #discoveredAt: number | undefined
  /** The last discovery's item of each object: a sweep fetches the schema with it when records outgrow the stored one. */
  #discovery = new Map<string, DiscoveryItem>()
  #running: Promise<void> | undefined
  #firstPass: { promise: Promise<void>; resolve: () => void }
  #wake: (() => void) | undefined
  #failure: string | undefined
  #hintsFailed = false
  #wokeAt: number | undefined
  #cancelWake: (() => void) | undefined
  /** When webhook traffic last shortened the rests (noteChanges): at most once per bound. */
  #nudgedAt: number | undefined

  constructor(options: SweepLoopOptions) {
    this.#options = options
    this.share = new BudgetShare(options.governor, { fraction: options.budgetShare, clock: options.clock })
    this.#records = new Map(options.selection.records.map((s) => [s.name, s]))
    for (const name of this.#records.keys()) this.#unit(name)
    if (options.resume !== undefined) this.#resume(options.resume)
    let resolve = () => {}
    const promise = new Promise<void>((r) => (resolve = r))
    this.#firstPass = { promise, resolve }
  }

  /** Resolves once every stream has been swept once (or the loop stopped first). */
  get firstPass(): Promise<void> {
    return this.#firstPass.promise
  }

  /** The streams the loop sweeps now (record streams, then each custom object's once discovered). */
  streams(): string[] {
    return [...this.#units.keys()]
  }

  /** Why the loop ended on its own (an unexpected error), or undefined while it runs as it should. */
  get failure(): string | undefined {
    return this.#failure
  }

  start(): void {
    this.#running ??= this.#loop().catch((err: unknown) => {
      this.#failure = err instanceof Error ? err.message : String(err)
      this.#firstPass.resolve()
      this.#options.logger.error({ err }, 'continuous sweeping stopped on an unexpected error; restart the daemon')
    })
  }

  /**
   * Notes `n` changes of `stream` seen at `at` (the webhook path): they count in its change rate.
   * The first such note after a quiet bound also ends that stream's rest; later ones within the
   * bound do not, and none shortens the other streams' rests, since each delivery carries its
   * change: deliveries spread over many accounts must not set every account sweeping at once.
   */
  noteChanges(stream: string, n: number, at: number = this.#options.clock.now()): void {
    const unit = this.#units.get(stream)
    if (unit === undefined || n <= 0) return
    unit.rate.add(n, at)
    if (this.#nudgedAt !== undefined && at - this.#nudgedAt < this.#options.maxIntervalMs) return
    this.#nudgedAt = at
    unit.restMs = restAfterActivity(unit.restMs, true)
  }

  /**
   * Something may have changed (a webhook delivery was stored): a loop resting plans again, at once
   * or, within WAKE_EVERY_MS of the last wake, once that has passed (one wake for a burst).
   */
  wake(): void {
    if (this.#cancelWake !== undefined || this.#controller.signal.aborted) return
    const { clock } = this.#options
    const now = clock.now()
    const due = this.#wokeAt === undefined ? now : this.#wokeAt + WAKE_EVERY_MS
    const fire = () => {
      this.#cancelWake = undefined
      this.#wokeAt = clock.now()
      this.#wake?.()
    }
    if (due <= now) fire()
    else this.#cancelWake = clock.setTimer(due - now, fire, { background: true })
  }

  async stop(): Promise<void> {
    this.#cancelWake?.()
    this.#cancelWake = undefined
    this.#controller.abort(new Error('the daemon is stopping'))
    this.#wake?.()
    this.#firstPass.resolve()
    await this.#running
  }

  async #loop(): Promise<void> {
    const signal = this.#controller.signal
    const ctx = this.#context(signal)
    const { clock, logger } = this.#options
    let source = new CountingSource(ctx.upstream, ctx.now)
    while (!signal.aborted) {
      const now = clock.now()
      if (
        this.#options.selection.objects !== undefined &&
        (this.#discoveredAt === undefined || now - this.#discoveredAt >= DISCOVERY_EVERY_MS)
      ) {
        // Discovery is a run of its own (as in a batch sweep); its slugs become streams of the plan.
        source = new CountingSource(ctx.upstream, ctx.now)
        this.#discoveredAt = now
        const result = await this.#options.serialQueue.run(() => this.#discover(ctx, source))
        if (result.outcome === 'interrupted' || signal.aborted) break
        this.#options.onRun?.(result)
        // A failed discovery is tried again after the bound, not after the full period.
        if (result.outcome === 'error') this.#discoveredAt = now - DISCOVERY_EVERY_MS + this.#options.maxIntervalMs
        this.#notePlan()
        continue
      }
      if (this.#firstPassDone()) this.#firstPass.resolve()
      for (const [stream, n] of this.#readHints()) this.noteChanges(stream, n, now)
      const plan = planNext({
        now,
        streams: [...this.#units].map(([name, u]): PlannedStream => ({ name, ...u, changeRate: u.rate.perSecond(now) })),
        maxIntervalMs: this.#options.maxIntervalMs,
        requestMs: this.#options.governor.guardedWindowMs / this.share.limit,
      })
      if (plan.kind !== 'sweep') {
        // Nothing to sweep (every stream resting or backing off, or none selected): wait for the
        // first to wake, the next discovery, or a webhook delivery (wake()).
        let until = plan.kind === 'wait' ? plan.until : now + this.#options.maxIntervalMs
        if (this.#discoveredAt !== undefined) until = Math.min(until, this.#discoveredAt + DISCOVERY_EVERY_MS)
        await this.#pause(until - now)
        continue
      }
      const unit = this.#units.get(plan.stream)!
      unit.lastStartedAt = now
      let backfill = false
      const result = await this.#options.serialQueue.run(() => {
        // Never swept to the end yet: this sweep walks (part of) the stream's history.
        backfill = ctx.state.get(plan.stream)?.lastSuccessAt == null
        return this.#sweep(ctx, plan.stream, source)
      })
      if (result.outcome === 'interrupted' || signal.aborted) break
      this.#options.onRun?.(result)
      this.#learn(plan.stream, unit, result, backfill)
      this.#notePlan()
      if (result.outcome === 'error')
        logger.warn(
          { stream: plan.stream, retryInMs: (unit.retryAt ?? now) - clock.now() },
          'continuous sweep failed; this stream is retried after a back-off',
        )
    }
    this.#firstPass.resolve()
  }

  // Hints only steer the plan: one that cannot be read (the mirror failing) is logged once and skipped.
  #readHints(): ReadonlyMap<string, number> {
    try {
      const hints = this.#options.hints?.() ?? new Map<string, number>()
      this.#hintsFailed = false
      return hints
    } catch (err) {
      if (!this.#hintsFailed) this.#options.logger.warn({ err }, 'cannot read the webhook traffic for the sweep plan; planning without it')
      this.#hintsFailed = true
      return new Map()
    }
  }

  #context(signal: AbortSignal): SyncContext {
    const base = this.#options.context(signal)
    const { client } = this.#options
    const share = this.share
    const { aside, clock } = this.#options
    // The pace is waited for beside the slot; the start itself (claimed in the mirror's request
    // ledger) and the answer's rows are the slot's again.
    const paced = async (signal: AbortSignal | undefined) => {
      for (let wait = share.readyAt() - clock.now(); wait > 0; wait = share.readyAt() - clock.now())
        await aside!(() => clock.sleep(wait, signal))
    }
    const upstream: Upstream = {
      get: async (path: string, query: Query | undefined, options) => {
        if (aside !== undefined) await paced(options.signal ?? signal)
        return client.get(path, query, { ...options, share })
      },
    }
    // Its requests start at the share's pace: the estimates of a backfill here count at that budget.
    return { ...base, upstream, budgetPerMinute: () => share.limit }
  }

  async #discover(ctx: SyncContext, source: CountingSource): Promise<RunResult> {
    const which = this.#options.selection.objects ?? []
    // A named object the account no longer has is left out until a discovery finds it again.
    const { result, found } = await RUNNERS.objects.discover(ctx, source, 'sweep', which, { missing: 'skip' })
    if (found !== undefined) {
      this.#discovery = found.items
      for (const slug of found.slugs) this.#unit(objectStream(slug))
      for (const name of [...this.#units.keys()]) {
        const slug = parseObjectStream(name)
        if (slug !== undefined && !found.slugs.includes(slug)) this.#units.delete(name)
      }
    }
    return result
  }

  #sweep(ctx: SyncContext, stream: string, source: CountingSource): Promise<RunResult> {
    const maxPages = this.pageCap()
    const record = this.#records.get(stream)
    if (record !== undefined) return RUNNERS.records.sweep(ctx, record, { maxPages })
    const slug = parseObjectStream(stream)!
    const discovery = this.#discovery.get(slug)
    return RUNNERS.objects.sweep(ctx, slug, source, { maxPages, ...(discovery === undefined ? {} : { discovery }) })
  }

  /**
   * Pages one continuous sweep reads at most before the next stream's turn: the requests the share
   * allows within the bound (`sync.maxSweepIntervalSeconds`) divided among the streams, at least
   * one. A backfill or a long catch-up then goes on over many sweeps (the cursor is committed with
   * each page), and a round of every stream still fits within the bound.
   */
  pageCap(): number {
    const perBound = (this.share.limit * this.#options.maxIntervalMs) / this.#options.governor.guardedWindowMs
    return Math.max(1, Math.floor(perBound / Math.max(1, this.#units.size)))
  }

  #learn(name: string, unit: UnitState, result: RunResult, backfill: boolean): void {
    const now = this.#options.clock.now()
    if (result.outcome === 'error') {
      unit.failures++
      unit.retryAt = now + retryDelayMs(unit.failures, this.#options.maxIntervalMs)
      // A rejected key fails every stream alike: they all wait, instead of each spending a request on it in turn.
      if (result.errorCode === KEY_REJECTED)
        for (const other of this.#units.values()) {
          other.failures = Math.max(other.failures, unit.failures)
          other.retryAt = Math.max(other.retryAt ?? 0, unit.retryAt)
        }
      return
    }
    unit.failures = 0
    unit.retryAt = undefined
    unit.cost = unit.cost * 0.8 + Math.max(1, result.requests) * 0.2
    if (backfill) {
      // The rows of a backfill are the account's history, not changes under way: they neither
      // raise the rate nor end the other streams' rests. Once it ends, the stream rests as one
      // quiet for a bound (restAfterBackfill): not at the active pace while the account is idle.
      unit.restMs = result.details?.capped === true ? 0 : restAfterBackfill(this.#options.maxIntervalMs)
      return
    }
    unit.rate.add(result.rows, now)
    // A capped sweep left pages to read: as much a reason to come back soon as a change.
    const changed = result.rows > 0 || result.details?.capped === true
    unit.restMs = restAfterSweep(unit.restMs, changed, this.#options.maxIntervalMs)
    if (changed) this.#active(name)
  }

  /** A change seen in `stream`: it rests no more, the others half as long. */
  #active(stream: string): void {
    for (const [name, unit] of this.#units) unit.restMs = restAfterActivity(unit.restMs, name === stream)
  }

  /**
   * Takes up a schedule where its writer left it: each stream's last sweep start, rest and back-off,
   * and the last discovery (none kept: discovered now). A time ahead of this clock counts as now;
   * streams the selection no longer has are left out, new ones are swept first.
   */
  #resume(plan: SweepPlan): void {
    const now = this.#options.clock.now()
    const at = (iso: string | null) => {
      const t = iso === null ? Number.NaN : parseInstant(iso)
      return Number.isNaN(t) ? undefined : Math.min(now, t)
    }
    const objects = this.#options.selection.objects
    if (objects !== undefined) this.#discoveredAt = at(plan.discoveredAt)
    for (const [name, startedAt, restMs, failures, retryAt] of plan.streams) {
      const slug = parseObjectStream(name)
      const kept =
        slug === undefined
          ? this.#records.has(name)
          : this.#discoveredAt !== undefined && objects !== undefined && (objects === 'all' || objects.includes(slug))
      const started = at(startedAt)
      if (!kept || started === undefined) continue
      const unit = this.#unit(name)
      unit.lastStartedAt = started
      // Numbers from JSON another process wrote: anything else counts as none.
      const n = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? Math.max(0, x) : 0)
      unit.restMs = Math.min(n(restMs), this.#options.maxIntervalMs)
      unit.failures = n(failures)
      const retry = at(retryAt)
      unit.retryAt = retry === undefined ? undefined : Math.max(retry, started)
    }
  }

  #notePlan(): void {
    if (this.#options.onPlan === undefined) return
    const iso = (t: number | undefined) => (t === undefined ? null : new Date(t).toISOString())
    const streams: SweepPlan['streams'] = []
    for (const [name, u] of this.#units)
      if (u.lastStartedAt !== undefined) streams.push([name, iso(u.lastStartedAt)!, u.restMs, u.failures, iso(u.retryAt)])
    try {
      this.#options.onPlan({ writtenAt: iso(this.#options.clock.now())!, discoveredAt: iso(this.#discoveredAt), streams })
    } catch (err) {
      this.#options.logger.warn({ err }, 'cannot keep the sweep plan in the mirror; a takeover would sweep every stream first')
    }
  }

  #firstPassDone(): boolean {
    if (this.#options.selection.objects !== undefined && this.#discoveredAt === undefined) return false
    return [...this.#units.values()].every((u) => u.lastStartedAt !== undefined)
  }

  #unit(name: string): UnitState {
    let unit = this.#units.get(name)
    if (unit === undefined) {
      unit = { lastStartedAt: undefined, rate: new ChangeRate(), cost: 1, failures: 0, retryAt: undefined, restMs: 0 }
      this.#units.set(name, unit)
    }
    return unit
  }

  async #pause(ms: number): Promise<void> {
    const signal = this.#controller.signal
    await new Promise<void>((resolve) => {
      const cancel = this.#options.clock.setTimer(Math.max(1, ms), done)
      function done() {
        cancel()
        resolve()
      }
      this.#wake = done
      if (signal.aborted) done()
    })
    this.#wake = undefined
  }
}

/**
 * The webhook traffic as hints for the planner: deliveries stored since the last call, counted by
 * the record stream their event names (`job.updated` is a change of `jobs`), read from the inbox
 * by its receipt order.
 */
export function webhookHints(sqlite: Sqlite, records: readonly RecordStream[]): () => ReadonlyMap<string, number> {
  const byPrefix = new Map<string, string>()
  for (const s of records)
    for (const event of [...s.snapshotEvents, ...s.deletions.events]) byPrefix.set(event.slice(0, event.indexOf('.')), s.name)
  const readEvents = inboxEventsReader(sqlite)
  return () => {
    const counts = new Map<string, number>()
    for (const row of readEvents()) {
      const stream = byPrefix.get(row.event.slice(0, row.event.indexOf('.')))
      if (stream !== undefined) counts.set(stream, (counts.get(stream) ?? 0) + 1)
    }
    return counts
  }
}
