// The request pipeline of the emulated API: faults (as a gateway would inject them), route match,
// authentication, the per-key rate limit, the scope check, the body, the handler; then the log.
// Control routes (/__emulator/...) never reach it (see ../account.ts).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'
import { authenticate, hasScope } from '../auth/authenticate.js'
import { rateLimited } from '../auth/rate-limiter.js'
import type { EmulatorContext } from '../context.js'
import { forbidden, HttpError, notFound } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { readBody, readForm } from './read-body.js'
import { sendJson, sendText } from './respond.js'
import type { Router } from './router.js'

/** Answers one request, whose URL the caller has parsed. */
export type UrlHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>

// A UTC datetime as the emulator writes it, inside a JSON string: the `zonelessTimes` fault drops the `Z`.
const UTC_IN_JSON = /"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z"/g

function withoutZones(body: unknown): string {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : JSON.stringify(body)
  return text.replace(UTC_IN_JSON, '"$1"')
}

// A copy, so the request log still shows the page that was asked for.
function withoutPage(query: URLSearchParams): URLSearchParams {
  const copy = new URLSearchParams(query)
  copy.delete('page')
  return copy
}

const GATEWAY_PAGE = (status: number): string =>
  `<html><head><title>${status}</title></head><body><h1>${status} Bad Gateway</h1></body></html>`

export function requestHandler(ctx: EmulatorContext, router: Router): UrlHandler {
  return async (req, res, url) => {
    const method = req.method ?? 'GET'
    const path = url.pathname
    // Arrival time: a rate limit is judged on request starts, and injected latency delays the end.
    const startedAt = ctx.clock.now()
    let keyId: string | null = null
    let status = 0
    try {
      const fault = ctx.faults.decide(method, path)
      if (fault !== null) {
        if (fault.latencyMs > 0) await delay(fault.latencyMs)
        if (fault.reset) {
          req.socket.destroy()
          return
        }
        if (fault.force429 !== null) {
          const limit = ctx.options.rateLimit === false ? 60 : ctx.options.rateLimit
          throw rateLimited(limit, ctx.clock.now() + fault.force429 * 1000, ctx.clock.now())
        }
        if (fault.status5xx !== null) {
          status = fault.status5xx
          if (status === 500)
            sendJson(
              res,
              500,
              { success: false, message: 'Internal server error', error: 'Internal server error', code: 'INTERNAL_ERROR' },
              ctx.clock.now(),
            )
          else sendText(res, status, GATEWAY_PAGE(status), ctx.clock.now(), { 'content-type': 'text/html' })
          return
        }
      }
      const match = router.match(method, path)
      if (match === null) throw notFound(`No route ${method} ${path}`)
      const { route } = match
      let key = null
      let userId: string | null = null
      if (route.family !== 'open') {
        const now = ctx.clock.now()
        const caller = authenticate(req.headers, route.family, ctx.keys, now)
        key = caller.key
        // A support-issued JWT acts as the account owner (an emulator assumption, see README).
        userId = caller.key?.createdBy ?? caller.userId ?? ctx.state.ownerUserId
        if (key !== null) {
          keyId = key.id
          // Spec: Limits, "all keyed requests". A per-key override applies even when the default is off.
          ctx.limiter.take(key.id, key.rateLimit ?? (ctx.options.rateLimit === false ? null : ctx.options.rateLimit), now)
          key.lastUsedAt = iso(now)
          if (route.family === 'v1' && route.scope !== undefined && !hasScope(key, route.scope)) throw forbidden(route.scope)
        }
      }
      const writes = method === 'POST' || method === 'PUT' || method === 'PATCH'
      const body = !writes ? undefined : route.form === undefined ? await readBody(req) : await readForm(req, route.form)
      const query = fault?.ignorePage === true ? withoutPage(url.searchParams) : url.searchParams
      const out = await route.handler({
        method,
        path,
        params: match.params,
        query,
        body,
        headers: req.headers,
        key,
        userId,
        tieShuffle: fault?.tieShuffle ?? null,
      })
      status = out.status ?? 200
      sendJson(res, status, fault?.zonelessTimes === true ? withoutZones(out.body) : out.body, ctx.clock.now(), out.headers)
    } catch (err) {
      if (err instanceof HttpError) {
        status = err.status
        sendJson(res, status, err.body(), ctx.clock.now(), err.headers)
      } else {
        status = 500
        const message = err instanceof Error ? err.message : String(err)
        sendJson(
          res,
          500,
          { success: false, message: `Internal server error: ${message}`, error: 'Internal server error', code: 'INTERNAL_ERROR' },
          ctx.clock.now(),
        )
      }
    } finally {
      ctx.counters.bump('requests.total')
      ctx.counters.bump(`requests.status.${status}`)
      ctx.log.add({
        time: iso(ctx.clock.now()),
        startedAt: iso(startedAt),
        keyId,
        userAgent: req.headers['user-agent'] ?? null,
        method,
        path,
        query: url.search,
        status,
      })
    }
  }
}
