// One account of the daemon as a unit: its app (mirror, run ownership, request governor, client),
// webhook service, sweeps and schedules, gap checks, retention, metrics and its part of the
// destination. The daemon (daemon.ts) holds the process's listener and checkpoint thread and fans
// start, stop and readiness out over its accounts; a test can start and stop one on its own.
import { RECORD_STREAMS } from '../../connectors/index.js'
import { selectStreams } from '../../connectors/selection.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { SCHEDULE_CONTINUOUS, SCHEDULE_OFF, type Config } from '../config/index.js'
import { createPostgresDestination, type DestinationPool, type Fence, type PostgresDestination } from '../destination/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { BackgroundCheckpoints, CheckpointService } from '../store/sqlite/background-checkpoints.js'
import { MirrorCheckpoints } from './mirror-checkpoints.js'
import { streamFreshness } from '../store/read-models/stream-freshness.js'
import { readSweepPlan, writeSweepPlan, type SweepPlan } from '../store/repositories/takeover-state.js'
import { parseObjectStream } from '../model/streams.js'
import type { BodyBudget } from '../webhooks/body-budget.js'
import { customObjectSink } from '../webhooks/custom-object-sink.js'
import { DeliveryGapCheck } from '../webhooks/delivery-gaps.js'
import type { IntakeJournal } from '../webhooks/intake-journal.js'
import { createWebhookService, type WebhookService } from '../webhooks/webhook-service.js'
import type { LeaseHooks } from './api-access.js'
import { createApp, type App } from './create-app.js'
import { DaemonMetrics } from './daemon-metrics.js'
import type { SharedFamilies } from './account-metric-families.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { registerDestinationMetrics } from './destination-metrics.js'
import type { ReadyAnswer } from './http-server.js'
import { NO_WAIT } from './mirror-parker.js'
import { MirrorReadiness, runningAnswer } from './mirror-readiness.js'
import { SlotWork, type MirrorSlot } from './mirror-slots.js'
import { enableIncrementalVacuumAtStart } from './retention-job.js'
import { Scheduler, spreadOffsetMs } from './scheduler.js'
import { SweepLoop, webhookHints } from './sweep-loop.js'
import { CHECKPOINT_JOB, SerialQueue, syncJobs } from './sync-jobs.js'
import { parseInstant } from '../model/timestamps.js'

/** The id of the one account today's configuration describes. */
export const DEFAULT_ACCOUNT = 'default'

export interface AccountRuntimeDeps {
  /** The process's logger: the account logs through a child that carries `account: id`. */
  logger: Logger
  /** The process's one clock. Default: the system clock. */
  clock?: Clock
  /** The process's checkpoint thread: the account registers its mirror with it at start. */
  checkpoints: CheckpointService
  /** Default DEFAULT_ACCOUNT. */
  id?: string
  /** The account's share of the process's webhook body budget (webhooks/body-budget.ts); default: a budget of its own. */
  bodyBudget?: BodyBudget
  /** This replica's lease on the account, when replicas share the accounts (replica.ts). */
  lease?: AccountLease
  /** The process's Postgres connections, shared by every account's destination (destination.postgres.maxConnections). */
  destinationPool?: DestinationPool
  /** The process's webhook intake journal (webhooks/intake-journal.ts): acks through it, relayed into this account's inbox. */
  intakeJournal?: IntakeJournal
  /** Turns for first sweeps, shared by the process's accounts (a few backfill at once); default: no wait. */
  firstSweepTurns?: Turns
  /** Its slot among the process's open mirrors (mirror-slots.ts): every run and job holds it; default: no cap. */
  mirrorSlot?: MirrorSlot
  /** Turns for the probes /readyz refreshes in the background, shared by the process's accounts; default: no wait. */
  probeTurns?: Turns
  /** One of several accounts in the process: its scheduled jobs run at its own offset after each tick (spreadOffsetMs). */
  spreadSchedules?: boolean
  /** The process's families (`metrics.perAccount` "summary"): the account keeps a few series; default: every family its own. */
  sharedMetrics?: SharedFamilies
}

export interface ReadyOptions {
  freshForMs?: number
}

/** At most a few holders at once (turns.ts). */
export interface Turns {
  run<T>(work: () => Promise<T>): Promise<T>
}

/** What the daemon's parking of idle mirrors (mirror-parker.ts) reads of an account. */
export interface MirrorActivity {
  /** The writer is open, or the checkpoint thread has not let go of it yet (its park is under way). */
  open: boolean
  /** A run, a job, a webhook delivery or a destination batch is under way: not to be parked. */
  busy: boolean
  /** Grows with every use of the mirror (parkable-connection.ts). */
  uses: number
}

/** A replica's lease on the account: its governor's window and permit, and its destination's fence (docs/sharding.md, Wiring). */
export interface AccountLease extends LeaseHooks {
  /** Run last (before COMMIT) in each destination transaction that writes the account; throws LeaseLost once another replica owns it. */
  fence: Fence
  /** The lease's epoch: the destination records it with the mirror, so a later owner's mirror replaces an earlier one's. */
  epoch?: number
  /** Takeover hook: rebuilds the mirror from the warehouse before anything runs; true when it did (the sweeps go on with its plan). */
  restore?: (mirror: Sqlite) => Promise<boolean>
  /** The shared inbox replays the deliveries taken within this long before the takeover: a restored copy as recent needs no reconciliation. */
  replayCoversMs?: number
}

export interface AccountStatus {
  id: string
  running: string[]
  next: Record<string, string | null>
  off: string[]
  webhookBacklog: number
  sweepFailure: string | undefined
}

export interface AccountRuntime {
  id: string
  app: App
  scheduler: Scheduler
  webhooks: WebhookService
  /** The mirror's registration with the checkpoint thread (idle until start). */
  readonly checkpoints: BackgroundCheckpoints
  metrics: DaemonMetrics
  /** The Postgres destination, when one is configured (FSM_POSTGRES_URL). */
  destination: PostgresDestination | undefined
  /** The continuous sweeps (`schedules.sweep` "continuous"), or undefined. */
  sweeps: SweepLoop | undefined
  /**
   * The record sweep run at start (none when `schedules.sweep` is "off"): resolves when it ends;
   * under continuous sweeping, once every stream has been swept once.
   */
  firstSweep: Promise<void>
  /**
   * Reference data and account metadata read at start when the mirror has none yet: resolves when
   * done, true when it was read, false when there was nothing to read (or its schedule is off).
   */
  referenceAtStart: Promise<boolean>
  webhookHandler: (req: IncomingMessage, res: ServerResponse) => void
  /** Starts intake, schedules, sweeps, checkpoints and the destination (once). */
  start(): void
  /** Its /readyz answer; `freshForMs` answers from a probe that young, refreshing an older one in the background. */
  ready(options?: ReadyOptions): Promise<ReadyAnswer>
  status(): AccountStatus
  /** Schedules end, the page in flight commits, the inbox drains (deliveries are answered 503); the mirror stays open. */
  drain(): Promise<void>
  /** drain(), then the mirror closes (left open when the disk does not answer: stuck()). */
  stop(): Promise<void>
  /** After stop(): a sync of the disk never returned; the mirror was left open (closed once the disk answers). */
  stuck(): boolean
  activity(): MirrorActivity
  /**
   * Closes the mirror while the account is idle (src/store/README.md, "Idle mirrors"): its
   * checkpoint registration ends first; true when it was parked. The next use opens it again.
   * `now`: at once, without waiting for the checkpoint thread to hold it (room for another mirror).
   */
  park(now?: boolean): Promise<boolean>
}

/** Builds an account (opens its mirror, migrates it) without starting anything that runs. */
export async function openAccountRuntime(config: Config, deps: AccountRuntimeDeps): Promise<AccountRuntime> {
  const id = deps.id ?? DEFAULT_ACCOUNT
  const logger = deps.logger.child({ account: id })
  // The client is built before the metrics (which read its governor): forward through a holder.
  const metricsHolder: { metrics?: DaemonMetrics } = {}
  const app = await createApp(config, {
    logger,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
    onResponse: (e) => metricsHolder.metrics?.onResponse(e),
    ...(deps.lease === undefined ? {} : { lease: deps.lease }),
    parkable: true,
  })
  const clock = app.clock
  const parking = app.mirror.parking
  const now = () => clock.now()
  // Before anything else writes or listens: on an older, small mirror this is a VACUUM (retention-job.ts).
  enableIncrementalVacuumAtStart(app.mirror.sqlite, app.mirror.path, logger)
  const restored = (await deps.lease?.restore?.(app.mirror.sqlite)) === true
  // Under a lease the sweeps go on with the mirror's plan (a restored copy's, or its own); a restored
  // copy is reconciled unless the replay covers its age (docs/sharding.md, Why it ends exact).
  const resume = deps.lease === undefined ? undefined : readSweepPlan(app.mirror.sqlite)
  const covers = deps.lease?.replayCoversMs
  const copiedAt =
    resume === undefined ? Number.NaN : Math.min(parseInstant(resume.writtenAt), parseInstant(resume.pendingSince ?? resume.writtenAt))
  const reconcileRestored = restored && !(covers !== undefined && clock.now() - copiedAt <= covers)
  if (deps.lease !== undefined)
    logger.info({ restored, resumed: resume !== undefined, reconcile: reconcileRestored }, 'takeover: the sweeps go on from the mirror')
  const webhooks = createWebhookService({
    sqlite: app.mirror.sqlite,
    config,
    logger,
    clock,
    client: app.client,
    streams: RECORD_STREAMS,
    selectedStreams: config.streams,
    objectSink: customObjectSink(app.mirror.sqlite),
    // A delivery is a change on the account: resting sweeps plan again (sweep-loop.ts).
    onStored: () => sweeps?.wake(),
    ...(deps.bodyBudget === undefined ? {} : { bodyBudget: deps.bodyBudget }),
    ...(deps.intakeJournal === undefined ? {} : { journal: { journal: deps.intakeJournal, accountId: id } }),
  })
  // Checkpoints on the process's worker thread, registered at start: a start that fails before
  // leaves the thread alone.
  const mirrorCheckpoints = new MirrorCheckpoints(deps.checkpoints, app.mirror.sqlite, logger)
  const register = () => mirrorCheckpoints.register()
  const unregister = () => mirrorCheckpoints.unregister()
  const selection = selectStreams(config.streams)
  // Each run and job holds the mirror's slot (mirror-slots.ts): never parked under it, and within the
  // process's cap. A sweep waiting for its pace gives it back (aside): not at work then, it may be parked.
  const slotWork = new SlotWork(deps.mirrorSlot)
  const hold = slotWork.hold
  const serialQueue = new SerialQueue(hold)
  // The plan reads the webhook hints of an open mirror only: a loop that wakes opens no parked one.
  const readWhileOpen = (read: () => ReadonlyMap<string, number>) => () =>
    parking === undefined ? read() : (parking.ifOpen(read) ?? new Map<string, number>())
  const sweeps =
    config.schedules.sweep === SCHEDULE_CONTINUOUS
      ? new SweepLoop({
          // A sweep a second would log a line or two each (finished, progress): below debug they are
          // left out, and warnings and failures still show. /metrics and status tell what the sweeps do.
          context: (signal) =>
            app.logger.isLevelEnabled('debug')
              ? app.syncContext({ signal })
              : { ...app.syncContext({ signal }), logger: app.logger.child({}, { level: 'warn' }), progress: undefined },
          client: app.client,
          governor: app.governor,
          clock: app.clock,
          selection,
          budgetShare: config.sync.budgetShare,
          maxIntervalMs: config.sync.maxSweepIntervalSeconds * 1000,
          serialQueue,
          logger,
          onRun: (r) => metricsHolder.metrics?.observeRun(r),
          hints: readWhileOpen(webhookHints(app.mirror.sqlite, selection.records)),
          aside: slotWork.aside,
          ...(resume === undefined ? {} : { resume }),
          // Kept for the next owner of the account, replicated with the takeover state.
          ...(deps.lease === undefined ? {} : { onPlan: (plan: SweepPlan) => writeSweepPlan(app.mirror.sqlite, plan) }),
        })
      : undefined
  // Every stream the account keeps: the selection's, and each custom object once known.
  const freshnessStreams = () => [
    ...new Set([
      ...selection.records.map((s) => s.name),
      ...(sweeps?.streams() ?? []),
      ...app.state
        .all()
        .map((s) => s.stream)
        .filter((s) => parseObjectStream(s) !== undefined),
      ...selection.reference.map((s) => s.name),
      ...selection.metadata.map((s) => s.name),
    ]),
  ]
  // A scrape does not open a parked mirror: it shows the figures read when the mirror was last open.
  let lastFreshness: ReturnType<typeof streamFreshness> = []
  const freshness = () => {
    const read = () => (lastFreshness = streamFreshness(app.mirror.sqlite, freshnessStreams(), app.clock.now()))
    return parking === undefined ? read() : (parking.ifOpen(read) ?? lastFreshness)
  }
  const notSwept = new Set([...selection.reference, ...selection.metadata].map((s) => s.name))
  const metrics = new DaemonMetrics({
    account: id,
    freshness,
    ...(sweeps === undefined ? {} : { sweepShare: () => ({ used: sweeps.share.startsInWindow(), limit: sweeps.share.limit }) }),
    governor: () => app.governor.state(),
    swept: (stream) => !notSwept.has(stream),
    webhookCounters: () => webhooks.metrics.snapshot(),
    webhookBacklog: () => webhooks.inbox.backlog,
    checkpoints: () => mirrorCheckpoints.stats(),
    now,
    ...(deps.sharedMetrics === undefined ? {} : { perAccount: 'summary' as const, shared: deps.sharedMetrics }),
  })
  metricsHolder.metrics = metrics
  // Triggers and feeds keep their last success from sync_state; streams take their own last sweep.
  const kept = freshnessStreams()
  metrics.seedLastSuccess(app.state.all().filter((s) => !kept.includes(s.stream)))
  metrics.seedFreshness((lastFreshness = streamFreshness(app.mirror.sqlite, kept, app.clock.now())))
  // The destination follows the mirror on its own: readiness does not look at it (a warehouse that
  // is down must not stop intake); its lag and errors are on /metrics and in `fsm-sync status`.
  const destination = createPostgresDestination(config, app.mirror, logger, app.clock, {
    accountId: id,
    ...(deps.destinationPool === undefined ? {} : { pool: deps.destinationPool }),
    ...(deps.lease === undefined
      ? {}
      : { fence: deps.lease.fence, ...(deps.lease.epoch === undefined ? {} : { epoch: deps.lease.epoch }) }),
  })
  if (destination !== undefined)
    registerDestinationMetrics(
      metrics.registry,
      () => destination.status(),
      deps.sharedMetrics === undefined ? undefined : { families: deps.sharedMetrics.summed, owner: metrics },
    )
  const gaps = new DeliveryGapCheck({
    client: app.client,
    sqlite: app.mirror.sqlite,
    secrets: webhooks.secrets,
    graceHours: config.webhooks.rotationGraceHours,
    logger,
    now,
    selectedStreams: config.streams,
  })
  const scheduler = new Scheduler(
    syncJobs({ app, metrics, gaps, serialQueue, checkpointsInBackground: () => mirrorCheckpoints.running }).map((job) => ({
      ...job,
      run: (signal: AbortSignal) => hold(() => job.run(signal)),
      // The accounts' jobs on one pattern would all queue for the mirror slots (and the upstream) in one minute.
      ...(deps.spreadSchedules === true && job.name !== CHECKPOINT_JOB ? { offsetMs: spreadOffsetMs(id, job.cron, clock.now()) } : {}),
    })),
    logger,
    clock,
  )
  // `next` lists every schedule: the continuous sweep as "continuous" (it has no next tick).
  const nextRuns = () => (sweeps === undefined ? scheduler.nextRuns() : { sweep: SCHEDULE_CONTINUOUS, ...scheduler.nextRuns() })

  let started = false
  let stopping = false
  const readiness = new MirrorReadiness({
    sqlite: app.mirror.sqlite,
    minRoomBytes: config.webhooks.maxBodyBytes,
    parking,
    hold,
    clock,
    logger,
    ...(deps.probeTurns === undefined ? {} : { turns: deps.probeTurns }),
  })
  const probes = readiness.inFlight
  const probe = async (freshForMs: number | undefined): Promise<ReadyAnswer> => {
    if (stopping) return { ready: false, reason: 'stopping' }
    const mirror = freshForMs === undefined ? await readiness.now() : readiness.cached(freshForMs)
    if (stopping) return { ready: false, reason: 'stopping' }
    return runningAnswer(mirror, { fault: webhooks.processor.fault, scheduler, sweepFailure: sweeps?.failure, nextRuns })
  }
  const ready = (options?: ReadyOptions): Promise<ReadyAnswer> => {
    const p = probe(options?.freshForMs)
    probes.add(p)
    void p.finally(() => probes.delete(p)).catch(() => undefined)
    return p
  }

  const atStart: { firstSweep?: (p: Promise<void>) => void } = {}
  const firstSweep = new Promise<void>((resolve) => (atStart.firstSweep = resolve))
  let resolveReference: (p: Promise<boolean>) => void = () => undefined
  const referenceAtStart = new Promise<boolean>((resolve) => (resolveReference = resolve))
  const start = (): void => {
    if (started || stopping) return
    started = true
    metrics.attach()
    // A mirror parked since its open (account-set.ts) registers at its first use.
    if (parking?.parked !== true) register()
    parking?.onReopen(() => {
      if (!stopping) register()
      deps.mirrorSlot?.opened()
    })
    webhooks.start()
    scheduler.start()
    destination?.start()
    const off = scheduler.off()
    if (off.length > 0)
      logger.info({ off }, `schedules switched off ("off" in the config): ${off.join(', ')}; those jobs run only when asked`)
    // Reference data and account metadata change rarely and keep their hourly schedule, but a mirror
    // that has none yet (a new deployment) gets them now rather than at the next tick.
    const missing = [...selection.reference.map((s) => s.name), ...selection.metadata.map((s) => s.name)].filter(
      (name) => app.state.get(name)?.lastSuccessAt == null,
    )
    const readReference = missing.length > 0 && config.schedules.reference !== SCHEDULE_OFF
    if (readReference) logger.info({ streams: missing }, 'no reference data or account metadata in the mirror yet: reading it now')
    else resolveReference(Promise.resolve(false))
    // The first pass and the reference read at start take one turn (a few tens of accounts
    // backfill at once); intake runs meanwhile.
    const turns = deps.firstSweepTurns ?? NO_WAIT
    void turns.run(async () => {
      if (stopping) return resolveReference(Promise.resolve(false))
      sweeps?.start()
      const reference = readReference ? scheduler.runNow('reference') : Promise.resolve(false)
      if (readReference) resolveReference(reference)
      await Promise.allSettled([sweeps?.firstPass, reference])
    })
    if (sweeps !== undefined)
      logger.info(
        { budgetShare: config.sync.budgetShare, maxSweepIntervalSeconds: config.sync.maxSweepIntervalSeconds },
        'sweeping continuously within its share of the request budget',
      )
    // One sweep at start, so a fresh deployment does not wait for the first tick (unless sweeps are off).
    atStart.firstSweep?.(
      sweeps !== undefined ? sweeps.firstPass : off.includes('sweep') ? Promise.resolve() : scheduler.runNow('sweep').then(() => undefined),
    )
    // A restored mirror misses a deletion only a delivery announced, when the replay does not cover the copy's age.
    if (reconcileRestored && !off.includes('reconcile')) void firstSweep.then(() => scheduler.runNow('reconcile'))
  }

  const stuck = () => webhooks.inbox.abandoned || mirrorCheckpoints.abandoned
  let parkingNow: Promise<boolean> | undefined
  const working = () =>
    stopping ||
    app.mirror.sqlite.inTransaction ||
    slotWork.atWork > 0 ||
    webhooks.inbox.backlog > 0 ||
    probes.size > 0 ||
    // The destination reads the mirror's change log at every poll: its mirror stays open.
    destination !== undefined
  const busy = () => parkingNow !== undefined || working()
  const park = (now = false): Promise<boolean> => {
    if (parking === undefined || parking.parked || busy() || stuck()) return Promise.resolve(false)
    // The writer closes first, once the checkpoint thread holds the mirror (it has looked at it):
    // then this close does not checkpoint (nor sync) on the event loop; the thread's, the last,
    // does it there. Not held yet: registered now, parked at a later look (or now, checkpointing here).
    if (!now && !mirrorCheckpoints.running) {
      register()
      return Promise.resolve(false)
    }
    if (!now && !mirrorCheckpoints.lookedAt()) return Promise.resolve(false)
    freshness() // what a scrape shows while it is parked
    if (!parking.park()) return Promise.resolve(false)
    return (parkingNow = unregister()
      .then(() => true)
      .finally(() => {
        parkingNow = undefined
        deps.mirrorSlot?.closed()
      }))
  }
  let drained: Promise<void> | undefined
  const drain = () =>
    (drained ??= (async () => {
      stopping = true
      readiness.stop()
      if (!started) return
      // The checkpoint registration ends beside them: the writer checkpoints on its own meanwhile.
      await Promise.all([scheduler.stop(), sweeps?.stop(), webhooks.stop(), mirrorCheckpoints.stop(), destination?.stop()])
    })())
  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      await drain()
      await parkingNow
      await Promise.allSettled([...probes])
      metrics.retire()
      // Closing the last connection checkpoints on this thread; with the disk not answering that
      // would hang here, past every timer. Left open, the next start recovers from the log.
      if (!stuck()) return app.close()
      logger.error('the disk is not answering: the mirror is left open; the next start recovers it from its log')
      // Closed once the checkpoint thread lets go of it (the disk answered), and stuck() is false again.
      if (!webhooks.inbox.abandoned)
        void mirrorCheckpoints
          .released()
          .then(() => app.close())
          .then(() => logger.info('the checkpoint thread let go of the mirror: it is closed now'))
          .catch((err: unknown) => logger.error({ err }, 'closing the mirror after the checkpoint thread let go failed'))
    })())

  return {
    id,
    app,
    scheduler,
    webhooks,
    // Its counters add up over the registrations of a mirror parked and reopened.
    get checkpoints() {
      return mirrorCheckpoints.view()
    },
    metrics,
    destination,
    sweeps,
    firstSweep,
    referenceAtStart,
    webhookHandler: webhooks.handler,
    start,
    ready,
    drain,
    status: () => ({
      id,
      running: scheduler.busy(),
      next: nextRuns(),
      off: scheduler.off(),
      webhookBacklog: webhooks.inbox.backlog,
      sweepFailure: sweeps?.failure,
    }),
    stop,
    stuck,
    // Open until the checkpoint thread too has let go of it (its slot is free then).
    // busy only when read: the slots read `open` of every account at each grant (mirror-slots.ts).
    activity: () => ({
      open: app.mirror.sqlite.open || parkingNow !== undefined,
      get busy() {
        return busy()
      },
      uses: parking?.uses ?? 0,
    }),
    park,
  }
}

/** Opens and starts an account (what a test or a daemon without a listener wants). */
export async function startAccountRuntime(config: Config, deps: AccountRuntimeDeps): Promise<AccountRuntime> {
  const runtime = await openAccountRuntime(config, deps)
  runtime.start()
  return runtime
}
