// `fsm-sync run` assembled: the process half (the HTTP listener, the checkpoint thread, the webhook
// body budget) and the set of account runtimes (account-set.ts; account-runtime.ts: mirror, client,
// webhook service, metrics, schedules and the continuous sweeps), one per account; `stop()` undoes
// it in order within the shutdown budget (docs/commands.md: exit 0 within 10 s of SIGTERM). The
// sweep in flight sees the scheduler's signal between pages, so the page being written commits and
// the run ends; the next start resumes from that checkpoint.
import { mkdirSync } from 'node:fs'
import type { Server } from 'node:http'
import path from 'node:path'
import { diffAccounts, type AccountConfig, type AccountsDiff, type Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { systemClock, type Clock } from '../model/clock.js'
import { startCheckpointService, type BackgroundCheckpoints, type CheckpointService } from '../store/sqlite/background-checkpoints.js'
import { accountBodyBudget, BodyBudget } from '../webhooks/body-budget.js'
import type { IntakeHandler } from '../webhooks/intake-handler.js'
import { IntakeJournal } from '../webhooks/intake-journal.js'
import { IntakeThread } from '../webhooks/intake-thread.js'
import type { WebhookMetrics } from '../webhooks/metrics.js'
import type { WebhookService } from '../webhooks/webhook-service.js'
import { createDestinationPool, type PostgresDestination } from '../destination/index.js'
import { DEFAULT_ACCOUNT, type AccountRuntime } from './account-runtime.js'
import { PROBE_FRESH_MS, readyOverAccounts } from './account-readiness.js'
import { AccountSet, type AccountSetStatus } from './account-set.js'
import type { DaemonMetrics } from './daemon-metrics.js'
import { checkDescriptors } from './descriptor-budget.js'
import { closeServer, createDaemonServer, listen } from './http-server.js'
import { exposition, ProcessMetrics } from './process-metrics.js'
import type { App } from './create-app.js'
import { startReplica, type Replica } from './replica.js'
import type { Scheduler } from './scheduler.js'
import type { SweepLoop } from './sweep-loop.js'

/** The daemon; `app` to `sweeps` are the default account's (today's one account), else the first running one's. */
export interface Daemon {
  app: App
  url: string
  scheduler: Scheduler
  webhooks: WebhookService
  checkpoints: BackgroundCheckpoints
  metrics: DaemonMetrics
  /** The Postgres destination, when one is configured (FSM_POSTGRES_URL). */
  destination: PostgresDestination | undefined
  /** See AccountRuntime.firstSweep. */
  firstSweep: Promise<void>
  /** See AccountRuntime.referenceAtStart. */
  referenceAtStart: Promise<boolean>
  /** The continuous sweeps (`schedules.sweep` "continuous"), or undefined. */
  sweeps: SweepLoop | undefined
  /** This replica, when `sharding.enabled`: only the accounts it holds a lease on run here. */
  replica: Pick<Replica, 'name' | 'owned'> | undefined
  /** With an accounts list (not sharded): the thread that runs the listener and writes the intake journal. */
  intakeThread: IntakeThread | undefined
  /** Every running account of the process, by id: a live view, accounts come and go in it. */
  accounts: ReadonlyMap<string, AccountRuntime>
  /**
   * Applies a new accounts list (`loadAccounts(...).accounts`): removed accounts stop (their mirrors
   * stay on disk), added ones start, changed ones restart alone; nothing else is interrupted. An
   * account that cannot open is kept apart and retried. Calls (and addAccount, removeAccount) run
   * one after the other; resolves with what changed.
   */
  applyAccounts(next: readonly AccountConfig[]): Promise<AccountsDiff>
  /**
   * Opens and starts one more account while the daemon runs: its own mirror, secrets, metrics
   * (`account="<id>"`) and webhook path `<webhooks.path>/<id>`, sharing the process's listener,
   * clock, checkpoint thread and webhook body budget. Refused for an id already in the set, and when
   * its mirror cannot open.
   */
  addAccount(config: Config, id: string): Promise<AccountRuntime>
  /**
   * Stops an account and takes it out: from the call on, its webhook path answers 404 and its series
   * leave /metrics; its mirror stays on disk. False when no account has that id.
   */
  removeAccount(id: string): Promise<boolean>
  /** Each account's state (running, opening, failed with its error, stopping). */
  status(): { accounts: Record<string, AccountSetStatus> }
  stop(): Promise<void>
  /**
   * After stop(): a sync of the disk never returned (an inbox's or the checkpoint worker's). Its
   * thread is held by the kernel, and a normal process exit would wait for it.
   */
  stuck(): boolean
}

export interface DaemonOptions {
  logger: Logger
  /** The process's one clock, handed to every account; each part takes it from its app. Default: the system clock. */
  clock?: Clock
  /** The accounts to run (`loadAccounts(...).accounts`). Default: `config` itself as the one account `default`. */
  accounts?: readonly AccountConfig[]
  /**
   * The accounts come from an `accounts` list: one that cannot open or start at start is kept apart
   * and retried while the others run. Without a list (today's one account) it fails the start, as before.
   */
  listed?: boolean
}

/**
 * The intake journal in the data folder, checkpointed on the process's thread, and the intake
 * thread that writes it and runs the listener (docs/webhooks.md, The intake thread); close() after
 * every account stopped.
 */
function openJournal(
  config: Config,
  logger: Logger,
  clock: Clock,
  checkpoints: CheckpointService,
  metrics: ProcessMetrics,
  hooks: { metricsOf: (id: string) => WebhookMetrics | undefined; onExit: () => void },
) {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const file = path.join(config.dataDir, 'intake-journal.db')
  const { maxConnections, bodyTimeoutMs, maxBufferedBytes } = config.webhooks
  metrics.registerJournal()
  const thread = new IntakeThread({
    file,
    webhookPath: config.webhooks.path,
    defaultAccount: DEFAULT_ACCOUNT,
    host: config.httpHost,
    port: config.httpPort,
    limits: { maxConnections, bodyTimeoutMs, maxBufferedBytes },
    logger,
    clock,
    metricsOf: hooks.metricsOf,
    journalMetrics: metrics.journal,
    onDrop: (n) => (metrics.listener.connectionsDropped += n),
    onExit: hooks.onExit,
  })
  const journal = new IntakeJournal({ file, logger, clock, writes: (onDurable) => thread.writes(onDurable) })
  const registration = checkpoints.register(journal.sqlite, { logger })
  return {
    journal,
    thread,
    close: async () => {
      await registration.stop()
      await journal.close()
    },
  }
}

/** Sharded, before this replica has joined: a delivery for a listed account is not acknowledged yet (503). */
function elsewhere(id: string): IntakeHandler {
  return (_req, res) => {
    res
      .writeHead(503, { 'content-type': 'application/json', 'retry-after': '5', connection: 'close' })
      .end(JSON.stringify({ error: `account ${id} is not running here yet: send again later` }))
  }
}

export async function startDaemon(config: Config, options: DaemonOptions): Promise<Daemon> {
  const { logger } = options
  // Checkpoints on one worker thread for the process (the writer's own, on the event loop, stalled
  // webhook acks); the thread starts with the first mirror an account registers.
  const checkpoints = startCheckpointService({ logger })
  // A few series per account with an accounts list, every family per account without (docs/metrics.md).
  const perAccount = config.metrics.perAccount ?? (options.listed === true ? 'summary' : 'full')
  const processMetrics = new ProcessMetrics(perAccount, () => set.list().map((a) => [a.id, set.runtimes.has(a.id)] as const))
  // The intake's bounds are the process's: one listener, one budget of body bytes that each account
  // draws on through its share (half of it while others run), so one account's flood leaves room.
  const { maxConnections, bodyTimeoutMs, maxBufferedBytes } = config.webhooks
  const bodyBudget = new BodyBudget(maxBufferedBytes)
  let list = options.accounts ?? [{ id: DEFAULT_ACCOUNT, config }]
  // Sharded: the set starts empty and takes in the accounts this replica acquires (replica.ts).
  const sharded = config.sharding.enabled
  checkDescriptors(list.length, logger)
  // One bound on Postgres connections for every account's destination (destination.postgres.maxConnections).
  const destinationPool = createDestinationPool(config.destination.postgres, options.clock ?? systemClock)
  // An accounts list: one intake journal acks every account's deliveries (docs/webhooks.md), and
  // the listener runs on the intake thread; main answers what it passes on, on loopback.
  const journal =
    // Not for one account without a list: its inbox is its journal (a second would cost a second commit and sync).
    options.listed === true && !sharded
      ? openJournal(config, logger, options.clock ?? systemClock, checkpoints, processMetrics, {
          metricsOf: (id) => set.runtimes.get(id)?.webhooks.metrics,
          onExit: () => void takeOverListener(),
        })
      : undefined
  const set: AccountSet = new AccountSet({
    logger,
    checkpoints,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    runtimeDeps: () => ({
      bodyBudget: accountBodyBudget(bodyBudget, () => set.runtimes.size),
      ...(destinationPool === undefined ? {} : { destinationPool }),
      ...(journal === undefined ? {} : { intakeJournal: journal.journal }),
      ...(processMetrics.shared === undefined ? {} : { sharedMetrics: processMetrics.shared }),
    }),
  })
  try {
    await set.open(sharded ? [] : list, options.listed !== true && !sharded)
  } catch (err) {
    await journal?.close()
    await Promise.all([checkpoints.stop(), destinationPool?.end()])
    throw err
  }
  // Today's fields are the default account's, else the first running one's.
  const main = (): AccountRuntime => {
    const found = set.runtimes.get(DEFAULT_ACCOUNT) ?? set.runtimes.values().next().value
    if (found === undefined) throw new Error('no account is running')
    return found
  }
  let stopping = false
  const serverOptions: Parameters<typeof createDaemonServer>[0] = {
    webhookPath: config.webhooks.path,
    defaultAccount: DEFAULT_ACCOUNT,
    // Sharded: every delivery goes to the shared inbox, the owner's own too (replica.ts), so a
    // replica that dies leaves none acknowledged in a local inbox the next owner never reads.
    webhookHandler: (id) =>
      sharded
        ? replica === undefined
          ? list.some((a) => a.id === id)
            ? elsewhere(id)
            : undefined
          : replica.intake(id)
        : set.webhookHandler(id),
    webhookLimits: { maxConnections, bodyTimeoutMs, maxBufferedBytes },
    onDrop: () => processMetrics.listener.connectionsDropped++,
    onUnknownAccount: () => processMetrics.listener.unknownAccount++,
    logger,
    metrics: async () => ({
      contentType: processMetrics.registry.contentType,
      body: await exposition([processMetrics.registry, ...[...set.runtimes.values()].map((r) => r.metrics.registry)], (err) =>
        logger.warn({ error: (err as Error).message }, "an account's metrics could not be collected: left out of this scrape"),
      ),
    }),
    ready: async () => {
      if (stopping) return { ready: false, reason: 'stopping' }
      const failure = journal?.thread.failure
      if (failure !== undefined) return { ready: false, reason: failure }
      const single = options.listed !== true && !sharded
      const byId = await set.readiness(single ? undefined : PROBE_FRESH_MS)
      if (stopping) return { ready: false, reason: 'stopping' }
      return readyOverAccounts(byId, single)
    },
  }
  const server: Server = createDaemonServer(serverOptions)
  /** The intake thread died: main answers on the public port itself (/readyz not ready, deliveries 503). */
  let takenOver: Server | undefined
  const takeOverListener = async () => {
    if (stopping || address === undefined) return
    takenOver = createDaemonServer(serverOptions)
    try {
      await listen(takenOver, address.port, config.httpHost)
    } catch (err) {
      logger.error({ err }, 'the main thread could not listen in place of the webhook intake thread')
    }
  }
  let replica: Replica | undefined
  let address: { address: string; family: string; port: number } | undefined
  try {
    if (journal === undefined) address = await listen(server, config.httpPort, config.httpHost)
    else {
      const own = await listen(server, 0, '127.0.0.1')
      address = await journal.thread.listen({ host: '127.0.0.1', port: own.port })
    }
  } catch (err) {
    if (journal !== undefined) await closeServer(server)
    await Promise.all([set.stop(), checkpoints.stop()])
    await journal?.close()
    await destinationPool?.end()
    throw new Error(`cannot listen on ${config.httpHost}:${config.httpPort} (FSM_HTTP_HOST, FSM_HTTP_PORT): ${(err as Error).message}`, {
      cause: err,
    })
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const url = `http://${host}:${address.port}`
  set.start()
  try {
    if (sharded)
      replica = await startReplica({
        config,
        set,
        accounts: () => list,
        logger,
        clock: options.clock ?? systemClock,
        bodyBudget,
        registry: processMetrics.registry,
      })
  } catch (err) {
    await closeServer(server)
    await Promise.all([set.stop(), checkpoints.stop()])
    await destinationPool?.end()
    throw err
  }
  logger.info(
    { url, webhooks: config.webhooks.path, schedules: config.schedules, streams: config.streams, accounts: list.length },
    'daemon started',
  )

  const stuck = () => checkpoints.abandoned || set.stuck()
  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true
      logger.info('stopping: schedules end, the page in flight commits, the webhook inbox drains')
      // Sharded: the runtimes stop first, then the leases are handed over at once (replica.ts).
      if (replica !== undefined) await set.drain().then(() => replica?.stop())
      // The checkpoint thread stops beside the accounts: their writers checkpoint on their own meanwhile.
      await Promise.all([set.drain(), checkpoints.stop()])
      await Promise.all([closeServer(server), journal?.thread.closeListener(), takenOver && closeServer(takenOver)])
      // Each account closes its mirror, or leaves it open when the disk does not answer.
      await set.stop()
      await journal?.close()
      await destinationPool?.end()
      logger.info('stopped cleanly')
    })())
  return {
    get app() {
      return main().app
    },
    url,
    get scheduler() {
      return main().scheduler
    },
    get webhooks() {
      return main().webhooks
    },
    get checkpoints() {
      return main().checkpoints
    },
    get metrics() {
      return main().metrics
    },
    get destination() {
      return main().destination
    },
    get firstSweep() {
      return main().firstSweep
    },
    get referenceAtStart() {
      return main().referenceAtStart
    },
    get sweeps() {
      return main().sweeps
    },
    replica,
    intakeThread: journal?.thread,
    accounts: set.runtimes,
    applyAccounts: async (next) => {
      // A longer list may need more descriptors than at start: said again, once per apply.
      if (next.length > list.length) checkDescriptors(next.length, logger)
      if (!sharded) {
        list = next
        return set.apply(next)
      }
      // Sharded: the coordinator reads the new list at its next heartbeat; accounts held here restart
      // when changed and stop when removed (the coordinator then releases their leases).
      const diff = diffAccounts(list, next)
      list = next
      await set.apply(() => {
        const here = new Set(set.list().map((a) => a.id))
        return next.filter((a) => here.has(a.id))
      })
      return diff
    },
    addAccount: (accountConfig, id) =>
      stopping ? Promise.reject(new Error(`account ${id} not added: the daemon is stopping`)) : set.add({ id, config: accountConfig }),
    removeAccount: (id) => set.remove(id),
    status: () => ({ accounts: set.status() }),
    stop,
    stuck,
  }
}
