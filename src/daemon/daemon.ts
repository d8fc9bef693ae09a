// `fsm-sync run` assembled: the process half (the HTTP listener, the checkpoint thread) and a map of
// account runtimes (account-runtime.ts: mirror, client, webhook service, metrics, schedules and the
// continuous sweeps), one per account; `stop()` undoes it in order within the shutdown budget
// (docs/commands.md: exit 0 within 10 s of SIGTERM). The sweep in flight sees the scheduler's
// signal between pages, so the page being written commits and the run ends; the next start resumes
// from that checkpoint.
import type { Server } from 'node:http'
import { ACCOUNT_ID_PATTERN, type Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { startCheckpointService, type BackgroundCheckpoints } from '../store/background-checkpoints.js'
import { accountWebhookPath } from '../webhooks/account-paths.js'
import { accountBodyBudget, BodyBudget } from '../webhooks/body-budget.js'
import type { WebhookService } from '../webhooks/webhook-service.js'
import type { PostgresDestination } from '../destination/index.js'
import { DEFAULT_ACCOUNT, openAccountRuntime, type AccountRuntime, type AccountStatus } from './account-runtime.js'
import type { DaemonMetrics } from './daemon-metrics.js'
import { closeServer, createDaemonServer, listen, type ReadyAnswer } from './http-server.js'
import { exposition, ProcessMetrics } from './process-metrics.js'
import type { App } from './create-app.js'
import type { Scheduler } from './scheduler.js'
import type { SweepLoop } from './sweep-loop.js'

/** The daemon; `app` to `sweeps` are the default account's (today's one account). */
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
  /** Every account of the process, by id. */
  accounts: ReadonlyMap<string, AccountRuntime>
  /**
   * Opens and starts one more account while the daemon runs: its own mirror, secrets, metrics
   * (`account="<id>"`) and webhook path `<webhooks.path>/<id>`, sharing the process's listener,
   * clock, checkpoint thread and webhook body budget. Refused for an id already running.
   */
  addAccount(config: Config, id: string): Promise<AccountRuntime>
  /**
   * Stops an account and takes it out: from the call on, its webhook path answers 404 and its series
   * leave /metrics; its mirror stays on disk. False when no account has that id.
   */
  removeAccount(id: string): Promise<boolean>
  status(): { accounts: Record<string, AccountStatus> }
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
}

export async function startDaemon(config: Config, options: DaemonOptions): Promise<Daemon> {
  const { logger } = options
  // Checkpoints on one worker thread for the process (the writer's own, on the event loop, stalled
  // webhook acks); the thread starts with the first mirror an account registers.
  const checkpoints = startCheckpointService({ logger })
  const accounts = new Map<string, AccountRuntime>()
  const processMetrics = new ProcessMetrics()
  // The intake's bounds are the process's: one listener, one budget of body bytes that each account
  // draws on through its share (half of it while others run), so one account's flood leaves room.
  const { maxConnections, bodyTimeoutMs, maxBufferedBytes } = config.webhooks
  const bodyBudget = new BodyBudget(maxBufferedBytes)
  const deps = { logger, checkpoints, ...(options.clock === undefined ? {} : { clock: options.clock }) }
  const open = (accountConfig: Config, id: string) =>
    openAccountRuntime(accountConfig, { ...deps, id, bodyBudget: accountBodyBudget(bodyBudget, () => accounts.size) })
  accounts.set(DEFAULT_ACCOUNT, await open(config, DEFAULT_ACCOUNT))
  const main = accounts.get(DEFAULT_ACCOUNT)!
  const runtimes = () => [...accounts.values()]
  let stopping = false
  const server: Server = createDaemonServer({
    webhookPath: config.webhooks.path,
    defaultAccount: DEFAULT_ACCOUNT,
    webhookHandler: (id) => accounts.get(id)?.webhookHandler,
    webhookLimits: { maxConnections, bodyTimeoutMs, maxBufferedBytes },
    onDrop: () => processMetrics.listener.connectionsDropped++,
    onUnknownAccount: () => processMetrics.listener.unknownAccount++,
    logger,
    metrics: async () => ({
      contentType: processMetrics.registry.contentType,
      body: await exposition([processMetrics.registry, ...runtimes().map((r) => r.metrics.registry)]),
    }),
    ready: async () => {
      if (stopping) return { ready: false, reason: 'stopping' }
      const answers = await Promise.all(runtimes().map(async (r) => [r.id, await r.ready()] as const))
      if (stopping) return { ready: false, reason: 'stopping' }
      // Today's fields stay at the top level (the default account's); `accounts` has each one's.
      const byId = Object.fromEntries(answers) as Record<string, ReadyAnswer>
      // With no default account (removed), the top level says only whether every account is ready.
      const top = byId[DEFAULT_ACCOUNT] ?? { ready: true }
      const notReady = answers.find(([, a]) => !a.ready)
      if (top.ready && notReady !== undefined)
        return { ...top, ready: false, reason: `account ${notReady[0]}: ${notReady[1].reason ?? 'not ready'}`, accounts: byId }
      return { ...top, accounts: byId }
    },
  })
  let address
  try {
    address = await listen(server, config.httpPort, config.httpHost)
  } catch (err) {
    await Promise.all([...runtimes().map((r) => r.stop()), checkpoints.stop()])
    throw new Error(`cannot listen on ${config.httpHost}:${config.httpPort} (FSM_HTTP_HOST, FSM_HTTP_PORT): ${(err as Error).message}`, {
      cause: err,
    })
  }
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const url = `http://${host}:${address.port}`
  for (const r of runtimes()) r.start()
  logger.info({ url, webhooks: config.webhooks.path, schedules: config.schedules, streams: config.streams }, 'daemon started')

  // Accounts being opened or stopped by addAccount and removeAccount: stop() waits for them.
  const opening = new Set<string>()
  const changes = new Set<Promise<unknown>>()
  const track = <T>(p: Promise<T>): Promise<T> => {
    changes.add(p)
    void p.finally(() => changes.delete(p)).catch(() => undefined)
    return p
  }
  // A removed account whose disk stopped answering keeps its mirror open: stuck() tells the exit.
  const leftStuck: AccountRuntime[] = []
  const addAccount = (accountConfig: Config, id: string): Promise<AccountRuntime> => {
    if (stopping) return Promise.reject(new Error(`account ${id} not added: the daemon is stopping`))
    if (!ACCOUNT_ID_PATTERN.test(id))
      return Promise.reject(new Error(`account id ${JSON.stringify(id)} does not match ${ACCOUNT_ID_PATTERN}`))
    if (accounts.has(id) || opening.has(id)) return Promise.reject(new Error(`account ${id} is already running`))
    opening.add(id)
    return track(
      (async () => {
        try {
          const runtime = await open(accountConfig, id)
          if (stopping) {
            await runtime.stop()
            throw new Error(`account ${id} not added: the daemon is stopping`)
          }
          accounts.set(id, runtime)
          runtime.start()
          logger.info({ account: id, webhooks: accountWebhookPath(config.webhooks.path, id) }, 'account added')
          return runtime
        } finally {
          opening.delete(id)
        }
      })(),
    )
  }
  const removeAccount = async (id: string): Promise<boolean> => {
    const runtime = accounts.get(id)
    if (runtime === undefined) return false
    accounts.delete(id)
    await track(runtime.stop())
    if (runtime.stuck()) leftStuck.push(runtime)
    logger.info({ account: id }, 'account removed: its mirror stays on disk')
    return true
  }

  const stuck = () => checkpoints.abandoned || [...runtimes(), ...leftStuck].some((r) => r.stuck())
  let stopped: Promise<void> | undefined
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true
      await Promise.allSettled([...changes])
      logger.info('stopping: schedules end, the page in flight commits, the webhook inbox drains')
      // The checkpoint thread stops beside the accounts: their writers checkpoint on their own meanwhile.
      await Promise.all([...runtimes().map((r) => r.drain()), checkpoints.stop()])
      await closeServer(server)
      // Each account closes its mirror, or leaves it open when the disk does not answer.
      await Promise.all(runtimes().map((r) => r.stop()))
      logger.info('stopped cleanly')
    })())
  return {
    app: main.app,
    url,
    scheduler: main.scheduler,
    webhooks: main.webhooks,
    checkpoints: main.checkpoints,
    metrics: main.metrics,
    destination: main.destination,
    firstSweep: main.firstSweep,
    referenceAtStart: main.referenceAtStart,
    sweeps: main.sweeps,
    accounts,
    addAccount,
    removeAccount,
    status: () => ({ accounts: Object.fromEntries(runtimes().map((r) => [r.id, r.status()])) }),
    stop,
    stuck,
  }
}
