// One emulated account: its data, keys, rate limiter, webhooks, faults, request log and clock, the
// API pipeline and the control API over them. One server can carry many (index.ts); nothing here
// runs a timer until asked to (churn), so an idle account costs only its memory.
import { createHash, randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Counts } from './data/state.js'
import { apiKeyRoutes } from './auth/api-key-routes.js'
import { KEY_PREFIX, KeyStore, type IssueListener } from './auth/key-store.js'
import { LoginUsers, loginRoutes } from './auth/login-routes.js'
import { RateLimiter } from './auth/rate-limiter.js'
import { clientRoutes } from './api/clients.js'
import { IntegrationStore } from './api/integration-store.js'
import { integrationRoutes } from './api/integration-routes.js'
import { invoiceRoutes } from './api/invoices.js'
import { OverdueSweep } from './api/invoice-overdue.js'
import { jobRoutes } from './api/jobs.js'
import { legacyRoutes } from './api/legacy-routes.js'
import { visitRoutes } from './api/visits.js'
import type { EmulatorContext } from './context.js'
import { Churn } from './control/churn.js'
import { controlHandler } from './control/control-routes.js'
import { Counters } from './control/counters.js'
import { FaultTable } from './control/fault-table.js'
import { RequestLog } from './control/request-log.js'
import { EmulatorClock } from './core/clock.js'
import { Prng } from './core/prng.js'
import { seedState } from './data/seed.js'
import { requestHandler, type UrlHandler } from './http/server.js'
import { Router } from './http/router.js'
import { objectRoutes } from './objects/object-routes.js'
import { Dispatcher } from './webhooks/dispatcher.js'
import { webhookRoutes } from './webhooks/webhook-routes.js'
import { WebhookStore } from './webhooks/webhook-store.js'

export interface AccountSpec {
  id: string
  seed: number
  counts: Partial<Counts>
  /** The default key's plaintext; null: the stable one of `seed` and `id` (defaultKey). */
  apiKey: string | null
  options: EmulatorContext['options']
  now: () => number
  /** Told of every key and token the account issues (the server routes requests by them). */
  onIssue: IssueListener
}

/** The account's id for its 0-based index: `acct-001`, ..., `acct-999`, `acct-1000`. */
export const accountId = (index: number): string => `acct-${String(index + 1).padStart(3, '0')}`

/** The default key of an account: the same for the same seed and id, so a walkthrough repeats. */
export const defaultKey = (seed: number, id: string): string =>
  `${KEY_PREFIX}${createHash('sha256').update(`fsm-sync emulator key ${seed} ${id}`).digest('hex').slice(0, 48)}`

export class EmulatorAccount {
  readonly id: string
  readonly apiKey: string
  readonly ctx: EmulatorContext
  private readonly churn: Churn
  private readonly control: UrlHandler
  /** Built on the first API request: an account only driven through the control API never needs it. */
  private api: UrlHandler | null = null

  constructor(spec: AccountSpec) {
    const clock = new EmulatorClock(spec.now)
    const state = seedState(spec.seed, spec.counts, clock.now())
    const webhooks = new WebhookStore()
    const ctx: EmulatorContext = {
      state,
      clock,
      webhooks,
      keys: new KeyStore(() => randomBytes(12).toString('hex'), spec.onIssue),
      logins: new LoginUsers(),
      limiter: new RateLimiter(),
      dispatcher: new Dispatcher(webhooks, () => clock.now()),
      integrations: new IntegrationStore(clock.now()),
      faults: new FaultTable(new Prng(spec.seed ^ 0x5eed)),
      log: new RequestLog(),
      counters: new Counters(),
      overdue: new OverdueSweep(),
      options: { ...spec.options },
      baseUrl: '',
    }
    this.id = spec.id
    this.ctx = ctx
    const key = spec.apiKey ?? defaultKey(spec.seed, spec.id)
    this.apiKey = ctx.keys.create({ name: 'emulator default key', scopes: ['*'], key }, clock.now(), state.ownerUserId).key
    const churn = new Churn(ctx)
    this.churn = churn
    this.control = controlHandler({
      ctx,
      churn,
      reset: (newSeed, counts) => {
        churn.stop()
        // In place: route handlers hold `ctx.state`, and the default key keeps working.
        Object.assign(ctx.state, seedState(newSeed ?? ctx.state.seed, counts ?? {}, clock.now()))
        ctx.webhooks.clear()
        ctx.faults.clear()
        ctx.log.clear()
        ctx.counters.clear()
        ctx.limiter.reset()
        ctx.integrations = new IntegrationStore(clock.now())
      },
    })
  }

  /** An API request (the server chose this account by its credentials). */
  handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    // Background moves the service would have made by now (invoices turning overdue).
    this.ctx.overdue.run(this.ctx)
    this.api ??= requestHandler(this.ctx, this.router())
    return this.api(req, res, url)
  }

  /** A control request, its path already without the account prefix (`/__emulator/...`). */
  handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    this.ctx.overdue.run(this.ctx)
    return this.control(req, res, url)
  }

  stop(): void {
    this.churn.stop()
  }

  private router(): Router {
    const ctx = this.ctx
    const router = new Router()
    router.add(
      ...clientRoutes(ctx),
      ...jobRoutes(ctx),
      ...visitRoutes(ctx),
      ...invoiceRoutes(ctx),
      ...objectRoutes(ctx),
      ...webhookRoutes(ctx),
      ...apiKeyRoutes(ctx),
      ...integrationRoutes(ctx),
      ...legacyRoutes(ctx),
      ...loginRoutes(ctx),
    )
    return router
  }
}
