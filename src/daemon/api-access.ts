// The request governor and the client for the key, built one way for every command that calls the
// API (the daemon, `sync`, `reconcile`, `doctor`): with the mirror's shared window, what an earlier
// process started in the last minute counts (a restart after a crash, a cron run right after
// another), every process running at the same time claims each start in it (the daemon beside a
// cron reconcile), and the adaptive limit counts all of them as ours.
import { ApiClient, type ApiClientOptions, type ResponseEvent } from '../api/api-client.js'
import { systemClock, type Clock } from '../model/clock.js'
import { RequestGovernor } from '../api/governor/index.js'
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { RequestLedger } from '../store/repositories/request-ledger.js'

export interface ApiAccessOptions {
  /** Called after every upstream attempt (the daemon's request metrics). */
  onResponse?: (event: ResponseEvent) => void
  /** Requests in flight at once. Default: http.maxInFlight. */
  maxInFlight?: number
  retryPolicy?: ApiClientOptions['retryPolicy']
  /** Caps on the configured connect and headers timeouts (doctor answers quickly). */
  connectTimeoutMaxMs?: number
  headersTimeoutMaxMs?: number
  /** One time for the ledger, the governor and the client, so their windows agree. Default: the system clock. */
  clock?: Clock
  /**
   * Starts allowed back to back when the budget is idle (the governor's GCRA burst; default 2). A
   * command that makes a few requests and exits (doctor) need not be paced one per spacing; the
   * sliding window still bounds every process on the key together.
   */
  burst?: number
  /** The account's ownership when replicas share the accounts (docs/sharding.md): its seeded window and start record. */
  lease?: LeaseHooks
  /** The daemon's accounts: the process's connections to the origin, shared (ApiClientOptions.sharedPool). */
  sharedPool?: boolean
}

/** What a replica's lease on the account gives its governor. */
export interface LeaseHooks {
  /** The previous owner's last window on this clock (coordination's seedStarts), counted as this governor's own. */
  priorStarts: readonly number[]
  /** Told of every start, so that the next owner can count this one's last window. */
  onStart: (at: number) => void
  /** Asked just before each start: false once this replica may no longer act on the account (FencedError). */
  permit: () => boolean
}

export function createApiAccess(
  config: Config & { baseUrl: string; apiKey: string },
  logger: Logger,
  sqlite: Sqlite,
  options: ApiAccessOptions = {},
): { governor: RequestGovernor; client: ApiClient } {
  const clock = options.clock ?? systemClock
  const ledger = new RequestLedger(sqlite, undefined, () => clock.now())
  let ledgerFailed = false
  const failed = (err: unknown) => {
    // The budget still holds for this process; other processes on the key cannot see this start.
    if (!ledgerFailed)
      logger.warn({ err }, 'cannot claim a request start in the mirror; other processes on this key may exceed the budget with this one')
    ledgerFailed = true
  }
  const fromLedger = ledger.recent(clock.now())
  const priorStarts = options.lease === undefined ? fromLedger : [...fromLedger, ...options.lease.priorStarts].sort((a, b) => a - b)
  // Nothing to act on (the budget simply counts them): not shown at the default level.
  if (priorStarts.length > 0)
    logger.debug({ requests: priorStarts.length }, "requests started in the last minute by another process count against this one's budget")
  const governor = new RequestGovernor({
    clock,
    limitPerMinute: config.rateLimit,
    priorStarts,
    ...(options.lease === undefined ? {} : { onStart: options.lease.onStart, permit: options.lease.permit }),
    shared: {
      claim: (limit, windowMs) => {
        try {
          const claim = ledger.claim(limit, windowMs)
          ledgerFailed = false
          return claim
        } catch (err) {
          failed(err)
          return { granted: true }
        }
      },
      startsSince: (from) => {
        try {
          return ledger.startsSince(from)
        } catch (err) {
          failed(err)
          return undefined
        }
      },
    },
    maxInFlight: options.maxInFlight ?? config.http.maxInFlight,
    ...(options.burst === undefined ? {} : { burst: options.burst }),
    // However much another client spends the key, keep a tenth of the budget so that the mirror
    // still moves; a 429 then pauses us anyway.
    minLimit: Math.max(1, Math.ceil(config.rateLimit / 10)),
    onBudgetChange: (change) => logger.warn({ change }, 'request budget adapted to what the rate-limit headers say'),
  })
  const client = new ApiClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    governor,
    logger,
    clock,
    timeouts: {
      connectMs: Math.min(config.http.connectTimeoutMs, options.connectTimeoutMaxMs ?? Number.POSITIVE_INFINITY),
      headersMs: Math.min(config.http.headersTimeoutMs, options.headersTimeoutMaxMs ?? Number.POSITIVE_INFINITY),
      bodyMs: config.http.bodyTimeoutMs,
      deadlineMs: config.http.requestDeadlineMs,
    },
    ...(options.retryPolicy === undefined ? {} : { retryPolicy: options.retryPolicy }),
    ...(options.onResponse === undefined ? {} : { onResponse: options.onResponse }),
    ...(options.sharedPool === true ? { sharedPool: true } : {}),
  })
  return { governor, client }
}
