// The daemon's one listener (node:http): each account's webhook intake at `<webhooks.path>/<id>`
// (and the default account's at `webhooks.path`), `/healthz` (the process answers), `/readyz`
// (the mirrors are open and writable, migrations done, schedules running) and `/metrics`
// (Prometheus text).
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../log/logger.js'
import { accountWebhookPath, webhookPathAccount } from '../webhooks/account-paths.js'
import type { IntakeHandler } from '../webhooks/intake-handler.js'
import { capConnections, intakeServerOptions, type IntakeLimits } from '../webhooks/intake-limits.js'

export interface ReadyAnswer {
  ready: boolean
  reason?: string
  [key: string]: unknown
}

export interface DaemonHttpOptions {
  /** `webhooks.path`: the default account's deliveries; each account's at `<webhooks.path>/<id>`. */
  webhookPath: string
  /** The default account's id: the one `webhookPath` itself reaches. */
  defaultAccount: string
  /** The intake of the account `id`, looked up at each request (accounts come and go); undefined: no such account. */
  webhookHandler: (id: string) => IntakeHandler | undefined
  /** The webhook intake's bounds, the process's: connection cap, header, body and request deadlines, keep-alive. */
  webhookLimits: IntakeLimits
  /** Counts each connection closed on arrival past the cap. */
  onDrop?: () => void
  /** Counts each request to a webhook path of no account (answered 404). */
  onUnknownAccount?: () => void
  /** May write to the mirror and sync it (the probe), hence a promise. */
  ready: () => Promise<ReadyAnswer>
  metrics: () => Promise<{ contentType: string; body: string }>
  logger: Logger
}

/** The daemon's own endpoints, which no webhook path shadows (`webhooks.path` "/" puts accounts at `/<id>`). */
const OWN_PATHS = new Set(['/healthz', '/readyz', '/metrics'])

export function createDaemonServer(o: DaemonHttpOptions): Server {
  // One listener for the intake and the probes: the intake's bounds hold for all of it, and the
  // probes' connections count against the cap like any other.
  const server = createServer(intakeServerOptions(o.webhookLimits), (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const account = OWN_PATHS.has(path) ? undefined : webhookPathAccount(path, o.webhookPath, o.defaultAccount)
    if (account !== undefined) {
      const handler = o.webhookHandler(account)
      if (handler !== undefined) return handler(req, res)
      o.onUnknownAccount?.()
      // The running ids are not listed: they name the customers this daemon serves.
      return json(res, 404, {
        error: `no account ${JSON.stringify(account.slice(0, 64))} in this daemon: each account takes its deliveries at ${accountWebhookPath(o.webhookPath, '<id>')}`,
      })
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' })
    if (path === '/healthz') return json(res, 200, { status: 'alive' })
    if (path === '/readyz') {
      o.ready().then(
        (answer) => json(res, answer.ready ? 200 : 503, { status: answer.ready ? 'ready' : 'not ready', ...answer }),
        (err: unknown) => {
          o.logger.error({ err }, 'the readiness probe failed')
          json(res, 503, { status: 'not ready', ready: false, reason: `the readiness probe failed: ${(err as Error).message}` })
        },
      )
      return
    }
    if (path === '/metrics') {
      o.metrics().then(
        ({ contentType, body }) => {
          res.writeHead(200, { 'content-type': contentType }).end(body)
        },
        (err: unknown) => {
          o.logger.error({ err }, 'metrics could not be collected')
          json(res, 500, { error: 'metrics could not be collected' })
        },
      )
      return
    }
    json(res, 404, {
      error: `no route ${path}; try /healthz, /readyz, /metrics, ${o.webhookPath} or ${accountWebhookPath(o.webhookPath, '<id>')}`,
    })
  })
  capConnections(server, o.webhookLimits.maxConnections, o.onDrop)
  return server
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
}

export function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server.address() as AddressInfo)
    })
  })
}

/** Stops accepting, lets answers in progress finish, then drops idle keep-alive sockets. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeIdleConnections()
    // A client that holds a request open past the drain does not hold the shutdown. Real time, not
    // the Clock: it bounds socket I/O.
    setTimeout(() => server.closeAllConnections(), 2000).unref()
  })
}
