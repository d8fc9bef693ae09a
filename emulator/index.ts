// The emulator: a stateful, faithful local fake of the whole upstream API, written from the
// API's specification, with a control API under /__emulator/. See emulator/README.md.
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Counts } from './data/state.js'
import { apiKeyRoutes } from './auth/api-key-routes.js'
import { KeyStore } from './auth/key-store.js'
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
import { requestHandler } from './http/server.js'
import { Router } from './http/router.js'
import { objectRoutes } from './objects/object-routes.js'
import { Dispatcher } from './webhooks/dispatcher.js'
import { webhookRoutes } from './webhooks/webhook-routes.js'
import { WebhookStore } from './webhooks/webhook-store.js'

export interface EmulatorOptions {
  port?: number
  host?: string
  seed?: number
  counts?: Partial<Counts>
  rateLimit?: number | false
  allowHttpWebhooks?: boolean
  /** Client list rows carry `jobCount` and `jobTotalAmount` (spec: Client, "when job aggregation is enabled"). */
  jobAggregation?: boolean
  now?: () => number
}

export interface EmulatorHandle {
  url: string
  apiKey: string
  close(): Promise<void>
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<EmulatorHandle> {
  const clock = new EmulatorClock(options.now ?? Date.now)
  const seed = options.seed ?? 1
  const state = seedState(seed, options.counts ?? {}, clock.now())
  const webhooks = new WebhookStore()
  const ctx: EmulatorContext = {
    state,
    clock,
    webhooks,
    keys: new KeyStore(() => randomBytes(12).toString('hex')),
    logins: new LoginUsers(),
    limiter: new RateLimiter(),
    dispatcher: new Dispatcher(webhooks, () => clock.now()),
    integrations: new IntegrationStore(clock.now()),
    faults: new FaultTable(new Prng(seed ^ 0x5eed)),
    log: new RequestLog(),
    counters: new Counters(),
    overdue: new OverdueSweep(),
    options: {
      rateLimit: options.rateLimit ?? 60,
      allowHttpWebhooks: options.allowHttpWebhooks ?? false,
      jobAggregation: options.jobAggregation ?? false,
    },
    baseUrl: '',
  }
  const { key: apiKey } = ctx.keys.create({ name: 'emulator default key', scopes: ['*'] }, clock.now(), state.ownerUserId)
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
  const churn = new Churn(ctx)
  const control = controlHandler({
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
  const handle = requestHandler(ctx, router, control)
  const server = http.createServer({ noDelay: true, keepAlive: true }, (req, res) => void handle(req, res))
  server.keepAliveTimeout = 65_000
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, resolve)
  })
  const { port } = server.address() as AddressInfo
  ctx.baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  return {
    url: ctx.baseUrl,
    apiKey,
    close: async () => {
      churn.stop()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
