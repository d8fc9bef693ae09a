// The control API under /__emulator/ (no auth; documented in emulator/README.md). Not part of the
// spec: it drives the emulator from tests, benches and the demo.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { EmulatorContext } from '../context.js'
import type { Doc } from '../core/collection.js'
import { badRequest, HttpError, notFound } from '../core/http-error.js'
import { parseInstant } from '../core/iso-time.js'
import { asObject } from '../core/validate.js'
import { isIntegrationName } from '../api/integration-store.js'
import { postPayment } from '../api/invoice-payments.js'
import { expiryValue, rateLimitValue } from '../auth/api-key-routes.js'
import { keyView } from '../auth/key-store.js'
import { SEEDED_LOGIN } from '../auth/login-routes.js'
import { SCOPES } from '../data/account-config.js'
import { readBody } from '../http/read-body.js'
import { sendJson } from '../http/respond.js'
import type { Churn } from './churn.js'
import { addField, addOption, addStage, flushSchemaCache, removeField, setEnabled } from './schema-change.js'
import { mutate, stateOf, type MutateBody } from './mutate.js'
import { deliveryView, endpointView } from '../webhooks/webhook-store.js'
import type { Counts } from '../data/state.js'
import { recordCount } from '../data/seed.js'

export interface ControlDeps {
  ctx: EmulatorContext
  churn: Churn
  reset(seed: number | undefined, counts: Partial<Counts> | undefined): void
}

const flag = (v: unknown, name: string): boolean => {
  if (v !== undefined && typeof v !== 'boolean') throw badRequest(`'${name}' must be a boolean`)
  return v === true
}

const num = (v: unknown, name: string): number => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`'${name}' must be a number`)
  return v
}

async function route(d: ControlDeps, method: string, path: string, q: URLSearchParams, body: Doc): Promise<unknown> {
  const { ctx } = d
  const parts = path
    .split('/')
    .filter((s) => s !== '')
    .slice(1)
  const [head = '', ...rest] = parts
  const key = `${method} ${head}`
  switch (key) {
    case 'GET info':
      return {
        url: ctx.baseUrl,
        seed: ctx.state.seed,
        counts: ctx.state.counts,
        records: recordCount(ctx.state),
        clock: ctx.clock.describe(),
        options: ctx.options,
        // The seeded interactive-login user (POST /api/auth/login): the account owner.
        login: { ...SEEDED_LOGIN, userId: ctx.state.ownerUserId },
      }
    case 'POST reset':
      d.reset(body.seed === undefined ? undefined : num(body.seed, 'seed'), body.counts as Partial<Counts> | undefined)
      return { seed: ctx.state.seed, counts: ctx.state.counts, records: recordCount(ctx.state) }
    case 'GET state': {
      const resource = rest.join('/')
      if (resource === 'webhooks') return [...ctx.webhooks.endpoints.values()].map((e) => endpointView(e, false))
      if (resource === 'deliveries')
        return [...ctx.webhooks.deliveries.values()].map((x) => ({ endpointId: x.endpointId, ...deliveryView(x) }))
      if (resource === 'api_keys') return ctx.keys.all().map((k) => ({ ...keyView(k), revoked: k.revoked }))
      if (resource === 'company') return ctx.state.company
      return { raw: stateOf(ctx, resource) }
    }
    case 'POST mutate':
      return mutate(ctx, body as unknown as MutateBody)
    case 'GET clock':
      return ctx.clock.describe()
    case 'POST clock': {
      if (body.freezeAt === null) ctx.clock.unfreeze()
      else if (body.freezeAt !== undefined) {
        const ms =
          typeof body.freezeAt === 'string' ? parseInstant(body.freezeAt) : typeof body.freezeAt === 'number' ? body.freezeAt : null
        if (ms === null) throw badRequest("'freezeAt' must be an ISO-8601 date-time, epoch ms or null")
        ctx.clock.freeze(ms)
      }
      if (body.advanceMs !== undefined) ctx.clock.advance(num(body.advanceMs, 'advanceMs'))
      return ctx.clock.describe()
    }
    case 'GET churn':
      return d.churn.status()
    case 'POST churn':
      if (body.stop === true) d.churn.stop()
      else d.churn.start(num(body.ratePerSecond ?? 0, 'ratePerSecond'), body.mix as Doc | undefined)
      return d.churn.status()
    case 'GET faults':
      return ctx.faults.list()
    case 'POST faults': {
      if (body.clear === true) {
        ctx.faults.clear(typeof body.route === 'string' ? body.route : undefined)
        return ctx.faults.list()
      }
      if (typeof body.route !== 'string' || body.route === '') throw badRequest("'route' is required, e.g. 'GET /api/v1/*'")
      const f = body.force429 as Doc | undefined
      ctx.faults.set({
        route: body.route,
        status5xxShare: num(body.status5xxShare ?? 0, 'status5xxShare'),
        latencyMs: num(body.latencyMs ?? 0, 'latencyMs'),
        resetShare: num(body.resetShare ?? 0, 'resetShare'),
        force429:
          f === undefined
            ? null
            : {
                count: num(f.count ?? 1, 'force429.count'),
                retryAfterSeconds: num(f.retryAfterSeconds ?? 1, 'force429.retryAfterSeconds'),
              },
        ignorePage: flag(body.ignorePage, 'ignorePage'),
        zonelessTimes: flag(body.zonelessTimes, 'zonelessTimes'),
        shuffleTies: flag(body.shuffleTies, 'shuffleTies'),
      })
      return ctx.faults.list()
    }
    case 'GET requests': {
      const opt = (k: string) => q.get(k) ?? undefined
      const after = opt('after')
      const status = opt('status')
      return ctx.log.list({
        ...(after === undefined ? {} : { afterSeq: Number(after) }),
        ...(status === undefined ? {} : { status: Number(status) }),
        ...(opt('method') === undefined ? {} : { method: opt('method') }),
        ...(opt('path') === undefined ? {} : { pathPrefix: opt('path') }),
      } as Parameters<typeof ctx.log.list>[0])
    }
    case 'POST requests':
      if (rest[0] !== 'clear') break
      ctx.log.clear()
      return { cleared: true }
    case 'GET counters':
      return ctx.counters.snapshot({
        'deliveries.sent': ctx.dispatcher.sent,
        'deliveries.succeeded': ctx.dispatcher.succeeded,
        'deliveries.failed': ctx.dispatcher.failed,
        'churn.done': d.churn.done,
        'churn.errors': d.churn.errors,
      })
    case 'POST integrations': {
      const name = rest[0] ?? ''
      if (!isIntegrationName(name)) throw notFound(`Unknown integration '${name}'`)
      if (typeof body.connected !== 'boolean') throw badRequest("'connected' must be a boolean")
      ctx.integrations.get(name).connected = body.connected
      return { name, connected: body.connected }
    }
    case 'POST keys': {
      if (rest[0] !== undefined) {
        const k = ctx.keys.get(rest[0])
        if (k === undefined) throw notFound('API key not found')
        if (body.active !== undefined) k.isActive = body.active === true
        if (body.expiresAt !== undefined) {
          k.expiresMs = expiryValue(body.expiresAt)
          k.expiresAt = k.expiresMs === null ? null : new Date(k.expiresMs).toISOString()
        }
        if (body.rateLimit !== undefined) k.rateLimit = rateLimitValue(body.rateLimit)
        if (body.revoked === true) k.revoked = true
        return keyView(k)
      }
      const scopes = body.scopes ?? ['*']
      if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && (SCOPES as readonly string[]).includes(s)))
        throw badRequest(`'scopes' must be drawn from: ${SCOPES.join(', ')}`)
      const { record, key: plaintext } = ctx.keys.create(
        {
          name: typeof body.name === 'string' ? body.name : 'control key',
          scopes: scopes as string[],
          expiresMs: expiryValue(body.expiresAt),
          rateLimit: rateLimitValue(body.rateLimit),
          isActive: body.active !== false,
        },
        ctx.clock.now(),
        ctx.state.ownerUserId,
      )
      return { ...keyView(record), key: plaintext }
    }
    case 'POST support-token':
      return { token: ctx.keys.mintSupportToken() }
    case 'POST deliveries':
      if (rest[0] !== 'flush') break
      await ctx.dispatcher.flush()
      return { flushed: true }
    case 'POST account':
      // Account settings the spec leaves to the account: job aggregation on client lists.
      if (typeof body.jobAggregation !== 'boolean') throw badRequest("'jobAggregation' must be a boolean")
      ctx.options.jobAggregation = body.jobAggregation
      return { jobAggregation: ctx.options.jobAggregation }
    case 'POST invoices':
      // A payment through the connected processor (api/invoice-payments.ts).
      if (rest[1] !== 'payments' || rest.length !== 2) break
      return postPayment(ctx, rest[0], body)
    case 'POST objects': {
      const [slug = '', what = '', op = ''] = rest
      if (what === 'enabled') return setEnabled(ctx, slug, body)
      if (what === 'schema-cache' && op === 'flush') return flushSchemaCache(ctx, slug)
      if (what === 'stages' && op === '') return addStage(ctx, slug, body)
      if (what !== 'fields') break
      if (op === 'options') return addOption(ctx, slug, body)
      return op === 'remove' ? removeField(ctx, slug, body) : addField(ctx, slug, body)
    }
    case 'GET schema-cache':
      return ctx.state.schemaCache.describe(ctx.clock.now())
    case 'POST schema-cache':
      if (rest[0] !== 'flush') break
      return flushSchemaCache(ctx, undefined)
    default:
      break
  }
  throw notFound(`No control route ${method} /__emulator/${parts.join('/')}`)
}

export function controlHandler(d: ControlDeps) {
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const now = () => d.ctx.clock.now()
    try {
      const body = req.method === 'POST' ? asObject(await readBody(req)) : {}
      const data = await route(d, req.method ?? 'GET', url.pathname, url.searchParams, body)
      if (typeof data === 'object' && data !== null && 'raw' in data && typeof data.raw === 'string') {
        sendJson(res, 200, `{"success":true,"data":${data.raw}}`, now())
      } else sendJson(res, 200, { success: true, data }, now())
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, err instanceof Error ? err.message : String(err), 'INTERNAL_ERROR')
      sendJson(res, e.status, e.body(), now())
    }
  }
}
