// `fsm-sync run` assembled: the app (create-app.ts: mirror with its migrations, client), webhook
// service, metrics, the HTTP listener, the schedules and the continuous sweeps (sweep-loop.ts); `stop()` undoes it in order within the
// shutdown budget (README.md, Commands: exit 0 within 10 s of SIGTERM). The sweep in flight sees the scheduler's signal between pages, so the
// page being written commits and the run ends; the next start resumes from that checkpoint.
import { customObjects } from '../../connectors/custom-objects.js'
import type { Server } from 'node:http'
import { SCHEDULE_CONTINUOUS, SCHEDULE_OFF, type Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { startBackgroundCheckpoints, type BackgroundCheckpoints } from '../store/background-checkpoints.js'
import { DeliveryGapCheck } from '../webhooks/delivery-gaps.js'
import { createWebhookService, type WebhookService } from '../webhooks/webhook-service.js'
import { customObjectSink } from '../webhooks/custom-object-sink.js'
import { RECORD_STREAMS } from '../../connectors/index.js'
import { createPostgresDestination, type PostgresDestination } from '../destination/index.js'
import { registerDestinationMetrics } from './destination-metrics.js'
import { DaemonMetrics } from './daemon-metrics.js'
import { closeServer, createDaemonServer, listen } from './http-server.js'
import { probeMirror } from './mirror-probe.js'
import { enableIncrementalVacuumAtStart } from './retention-job.js'
import { createApp, type App } from './create-app.js'
import { Scheduler } from './scheduler.js'
import { Lane, syncJobs } from './sync-jobs.js'
import { streamFreshness } from '../store/stream-freshness.js'
import { selectStreams } from '../../connectors/selection.js'
import { SweepLoop, webhookHints } from './sweep-loop.js'

export interface Daemon {
  app: App
  url: string
  scheduler: Scheduler
  webhooks: WebhookService
  checkpoints: BackgroundCheckpoints
  metrics: DaemonMetrics
  /** The Postgres destination, when one is configured (FSM_POSTGRES_URL). */
  destination: PostgresDestination | undefined
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
  /** The continuous sweeps (`schedules.sweep` "continuous"), or undefined. */
  sweeps: SweepLoop | undefined
  stop(): Promise<void>
  /**
   * After stop(): a sync of the disk never returned (the inbox's or the checkpoint worker's). Its
   * thread is held by the kernel, and a normal process exit would wait for it.
   */
  stuck(): boolean
}

export interface DaemonOptions {
  logger: Logger
  /** The process's one clock, handed to createApp; every part below takes it from the app. Default: the system clock. */
  clock?: Clock
}

export async function startDaemon(config: Config, options: DaemonOptions): Promise<Daemon> {
  const { logger } = options
  // The client is built before the metrics (which read its governor): forward through a holder.
  const hook: { metrics?: DaemonMetrics } = {}
  const app = await createApp(config, {
    logger,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    onResponse: (e) => hook.metrics?.onResponse(e),
  })
  const clock = app.clock
  const now = () => clock.now()
  // Before anything else writes or listens: on an older, small mirror this is a VACUUM (retention-job.ts).
  enableIncrementalVacuumAtStart(app.mirror.sqlite, app.mirror.path, logger)
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
  })
  // Checkpoints on a worker thread (the writer's own, on the event loop, stalled webhook acks),
  // started once the daemon listens: a start that fails before leaves no thread behind.
  const started: { checkpoints?: BackgroundCheckpoints } = {}
  const selection = selectStreams(config.streams)
  const lane = new Lane()
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
          lane,
          logger,
          onRun: (r) => hook.metrics?.observeRun(r),
          hints: webhookHints(app.mirror.sqlite, selection.records),
        })
      : undefined
  // Every stream the daemon keeps: the selection's, and each custom object once known.
  const freshnessStreams = () => [
    ...new Set([
      ...selection.records.map((s) => s.name),
      ...(sweeps?.streams() ?? []),
      ...app.state
        .all()
        .map((s) => s.stream)
        .filter((s) => s.startsWith(`${customObjects.name}:`)),
      ...selection.reference.map((s) => s.name),
      ...selection.metadata.map((s) => s.name),
    ]),
  ]
  const m = new DaemonMetrics({
    freshness: () => streamFreshness(app.mirror.sqlite, freshnessStreams(), app.clock.now()),
    ...(sweeps === undefined ? {} : { sweepShare: () => ({ used: sweeps.share.startsInWindow(), limit: sweeps.share.limit }) }),
    governor: () => app.governor.state(),
    webhookCounters: () => webhooks.metrics.snapshot(),
    webhookBacklog: () => webhooks.inbox.backlog,
    checkpoints: () => started.checkpoints?.stats() ?? { passes: 0, busy: 0, errors: 0, logFrames: 0, copiedFrames: 0, micros: 0 },
    now,
  })
  hook.metrics = m
  // Triggers and feeds keep their last success from sync_state; streams take their own last sweep.
  const kept = freshnessStreams()
  m.seedLastSuccess(app.state.all().filter((s) => !kept.includes(s.stream)))
  m.seedFreshness(streamFreshness(app.mirror.sqlite, kept, app.clock.now()))
  // The destination follows the mirror on its own: /readyz does not look at it (a warehouse that is
  // down must not stop intake); its lag and errors are on /metrics and in `fsm-sync status`.
  const destination = createPostgresDestination(config, app.mirror, logger, app.clock)
  if (destination !== undefined) registerDestinationMetrics(m.registry, () => destination.status())
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
    syncJobs({ app, metrics: m, gaps, lane, checkpointsInBackground: () => started.checkpoints?.running === true }),
    logger,
    clock,
  )
  // `next` lists every schedule: the continuous sweep as "continuous" (it has no next tick).
  const nextRuns = () => (sweeps === undefined ? scheduler.nextRuns() : { sweep: SCHEDULE_CONTINUOUS, ...scheduler.nextRuns() })
  let stopping = false
  const server: Server = createDaemonServer({
    webhookPath: config.webhooks.path,
    webhookHandler: webhooks.handler,
    webhookLimits: webhooks.limits,
    onDrop: () => webhooks.metrics.intake.connectionsDropped++,
    logger,
    metrics: async () => ({ contentType: m.contentType, body: await m.text() }),
    ready: async () => {
      if (stopping) return { ready: false, reason: 'stopping' }
      const probe = await probeMirror(app.mirror.sqlite, config.webhooks.maxBodyBytes)
      if (stopping) return { ready: false, reason: 'stopping' }
      if (!probe.ok) return { ready: false, reason: probe.reason }
      const fault = webhooks.processor.fault
      if (fault !== undefined)
        return {
          ready: false,
          reason: `applying webhook deliveries fails since ${fault.since} (${fault.error}); next try in ${Math.round(fault.retryInMs / 1000)} s`,
        }
      if (!scheduler.active) return { ready: false, reason: 'schedules are not running' }
      if (sweeps?.failure !== undefined)
        return { ready: false, reason: `continuous sweeping stopped: ${sweeps.failure}; restart the daemon` }
      const stalled = scheduler.stalled()
      if (stalled.length > 0)
        return {
          ready: false,
          reason: `no next run for the schedule of ${stalled.join(', ')}: nothing would sync; fix schedules.* and restart`,
          next: nextRuns(),
        }
      return { ready: true, migrations: probe.migrations, running: scheduler.busy(), next: nextRuns(), off: scheduler.off() }
    },
  })
  let address
  try {
    address = await listen(server, config.httpPort, config.httpHost)
  } catch (err) {
    await app.close()
    throw new Error(`cannot listen on ${config.httpHost}:${config.httpPort} (FSM_HTTP_HOST, FSM_HTTP_PORT): ${(err as Error).message}`, {
      cause: err,
    })
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const url = `http://${host}:${address.port}`
  const bg = startBackgroundCheckpoints({ sqlite: app.mirror.sqlite, logger })
  started.checkpoints = bg
  webhooks.start()
  scheduler.start()
  destination?.start()
  logger.info({ url, webhooks: config.webhooks.path, schedules: config.schedules, streams: config.streams }, 'daemon started')
  if (sweeps !== undefined) {
    sweeps.start()
    logger.info(
      { budgetShare: config.sync.budgetShare, maxSweepIntervalSeconds: config.sync.maxSweepIntervalSeconds },
      'sweeping continuously within its share of the request budget',
    )
  }
  const off = scheduler.off()
  if (off.length > 0)
    logger.info({ off }, `schedules switched off ("off" in the config): ${off.join(', ')}; those jobs run only when asked`)
  // One sweep at start, so a fresh deployment does not wait for the first tick (unless sweeps are off).
  const firstSweep =
    sweeps !== undefined ? sweeps.firstPass : off.includes('sweep') ? Promise.resolve() : scheduler.runNow('sweep').then(() => undefined)
  // Reference data and account metadata change rarely and keep their hourly schedule, but a mirror
  // that has none yet (a new deployment) gets them now rather than at the next tick.
  const missing = [...selection.reference.map((s) => s.name), ...selection.metadata.map((s) => s.name)].filter(
    (name) => app.state.get(name)?.lastSuccessAt == null,
  )
  let referenceAtStart = Promise.resolve(false)
  if (missing.length > 0 && config.schedules.reference !== SCHEDULE_OFF) {
    logger.info({ streams: missing }, 'no reference data or account metadata in the mirror yet: reading it now')
    referenceAtStart = scheduler.runNow('reference')
  }

  const stuck = () => webhooks.inbox.abandoned || bg.abandoned
  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true
      logger.info('stopping: schedules end, the page in flight commits, the webhook inbox drains')
      // The checkpoint worker stops beside them: the writer checkpoints on its own meanwhile.
      await Promise.all([scheduler.stop(), sweeps?.stop(), webhooks.stop(), bg.stop(), destination?.stop()])
      await closeServer(server)
      // Closing the last connection checkpoints on this thread; with the disk not answering that
      // would hang here, past every timer. Left open, the next start recovers from the log.
      if (stuck()) logger.error('the disk is not answering: the mirror is left open; the next start recovers it from its log')
      else await app.close()
      logger.info('stopped cleanly')
    })())
  return { app, url, scheduler, webhooks, checkpoints: bg, metrics: m, destination, firstSweep, referenceAtStart, sweeps, stop, stuck }
}
