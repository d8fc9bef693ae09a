// The composition root: builds the object graph once per process (dependencies are passed in, never
// looked up): the mirror, the sync bookkeeping, one request governor for the key and the client that
// uses it. The daemon and the one-shot commands take what they need from it. It lives beside the
// daemon's other builders (api-access.ts, run-ownership.ts) so that the layer rule needs no new row.
import type { ApiClient, ResponseEvent } from '../api/api-client.js'
import { systemClock, type Clock } from '../model/clock.js'
import type { RequestGovernor } from '../api/governor/index.js'
import type { Config } from '../config/index.js'
import { ConfigError } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { openMirror, type Mirror } from '../store/sqlite/mirror-database.js'
import { SyncStateStore } from '../store/repositories/sync-state.js'
import type { SyncContext } from '../sync/sync-context.js'
import { createProgress } from '../sync/progress.js'
import { createApiAccess, type LeaseHooks } from './api-access.js'
import { RunOwnership } from './run-ownership.js'

export interface App {
  config: Config
  logger: Logger
  clock: Clock
  mirror: Mirror
  state: SyncStateStore
  governor: RequestGovernor
  client: ApiClient
  syncContext(options?: { progressTty?: NodeJS.WritableStream | undefined; signal?: AbortSignal }): SyncContext
  close(): Promise<void>
}

/** The settings every command that calls the API needs, reported together (exit 2). */
export function requireApiSettings(config: Config): { baseUrl: string; apiKey: string } {
  const issues = []
  if (config.baseUrl === undefined)
    issues.push({ key: 'FSM_BASE_URL', message: 'is required: the API base address, e.g. https://api.example.com' })
  if (config.apiKey === undefined) issues.push({ key: 'FSM_API_KEY', message: 'is required: an API key starting with svc_live_' })
  if (issues.length > 0 || config.baseUrl === undefined || config.apiKey === undefined) throw new ConfigError(issues)
  return { baseUrl: config.baseUrl, apiKey: config.apiKey }
}

export interface AppOptions {
  logger: Logger
  /** Time for the sync context, the run ownership and the request budget. Default: the system clock. */
  clock?: Clock
  /** Called after every upstream attempt (the daemon's request metrics). */
  onResponse?: (event: ResponseEvent) => void
  /** The account's lease, when replicas share the accounts (api-access.ts). */
  lease?: LeaseHooks
  /** The daemon's accounts: a mirror that can be parked while idle (src/store/README.md, "Idle mirrors"). */
  parkable?: boolean
}

export async function createApp(config: Config, options: AppOptions): Promise<App> {
  const { logger, clock = systemClock } = options
  const now = () => clock.now()
  const { baseUrl, apiKey } = requireApiSettings(config)
  const mirror = await openMirror(config.db, { mode: config.dbMode, logger, parkable: options.parkable === true })
  const parking = mirror.parking
  // Runs are owned: a command started beside a live daemon leaves the daemon's runs alone.
  const ownership = new RunOwnership(mirror.sqlite, logger, {
    clock,
    ...(parking === undefined ? {} : { whenOpen: (beat: () => void) => parking.ifOpen(beat) }),
  })
  parking?.onReopen(() => ownership.beatNow())
  const state = new SyncStateStore(mirror.sqlite, { ownerId: ownership.id })
  const abandoned = ownership.abandonGone(state)
  if (abandoned.runs > 0)
    logger.warn(
      { runs: abandoned.runs, owners: abandoned.owners },
      'runs left unfinished by a process that is gone are marked interrupted; going on from their last checkpoint',
    )
  // One budget for the key across processes (see api-access.ts).
  const { governor, client } = createApiAccess({ ...config, baseUrl, apiKey }, logger, mirror.sqlite, {
    clock,
    ...(options.onResponse === undefined ? {} : { onResponse: options.onResponse }),
    ...(options.lease === undefined ? {} : { lease: options.lease }),
    // The daemon's accounts share their connections to the upstream: sockets bounded for any number of accounts.
    ...(options.parkable === true ? { sharedPool: true } : {}),
  })
  return {
    config,
    logger,
    clock,
    mirror,
    state,
    governor,
    client,
    syncContext: (options = {}) => ({
      mirror,
      state,
      upstream: client,
      logger,
      now,
      options: {
        lookbackMs: config.sync.lookbackSeconds * 1000,
        pageSize: config.sync.pageSize,
        maxDeleteShare: config.reconcile.maxDeleteShare,
      },
      budgetPerMinute: () => governor.state().effectiveLimit,
      progress: createProgress({
        logger,
        now,
        budgetPerMinute: () => governor.state().effectiveLimit,
        pageSize: config.sync.pageSize,
        tty: options.progressTty,
      }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }),
    close: async () => {
      ownership.close()
      await client.close()
      await mirror.close()
    },
  }
}
