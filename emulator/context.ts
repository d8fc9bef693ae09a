// Everything a route handler may touch: the account, the clock, keys, limits, webhooks,
// integrations and the control-side tables. Built once per emulator (no module singletons).
import type { KeyStore } from './auth/key-store.js'
import type { LoginUsers } from './auth/login-routes.js'
import type { RateLimiter } from './auth/rate-limiter.js'
import type { EmulatorClock } from './core/clock.js'
import type { Counters } from './control/counters.js'
import type { FaultTable } from './control/fault-table.js'
import type { RequestLog } from './control/request-log.js'
import type { EventName } from './data/account-config.js'
import type { State } from './data/state.js'
import type { IntegrationStore } from './api/integration-store.js'
import type { OverdueSweep } from './api/invoice-overdue.js'
import type { Dispatcher } from './webhooks/dispatcher.js'
import type { WebhookStore } from './webhooks/webhook-store.js'

export interface EmulatorContext {
  state: State
  clock: EmulatorClock
  keys: KeyStore
  /** Interactive-login users beside the seeded owner (auth/login-routes.ts); they survive a reset. */
  logins: LoginUsers
  limiter: RateLimiter
  webhooks: WebhookStore
  dispatcher: Dispatcher
  integrations: IntegrationStore
  faults: FaultTable
  log: RequestLog
  counters: Counters
  /** Time-driven invoice moves, run before every request (see api/invoice-overdue.ts). */
  overdue: OverdueSweep
  /** `jobAggregation`: client list rows carry jobCount/jobTotalAmount (api/job-aggregation.ts). */
  options: { rateLimit: number | false; allowHttpWebhooks: boolean; jobAggregation: boolean }
  baseUrl: string
}

/**
 * Who a write is made by: the v1 API (emits webhooks), the web application (emits only the
 * `object.*` events, spec: "When events fire"), a legacy `/api/...` route (not a v1 write: emits
 * no client/job/visit/invoice event), or a silent control write (emits nothing).
 */
export type Origin = 'api' | 'app' | 'legacy' | 'silent'

export function emit(ctx: EmulatorContext, origin: Origin, event: EventName, payload: unknown): void {
  // Spec: "When events fire": client/job/visit/invoice events come from v1 writes only.
  if (origin === 'silent' || (origin !== 'api' && !event.startsWith('object.'))) return
  ctx.counters.bump(`events.${event}`)
  ctx.dispatcher.emit(event, payload)
}
