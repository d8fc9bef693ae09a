// The daemon's one listener (node:http): webhook intake at `webhooks.path`, `/healthz` (the
// process answers), `/readyz` (the mirror is open and writable, migrations done, schedules
// running) and `/metrics` (Prometheus text).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../log/logger.js'
import { capConnections, intakeServerOptions, type IntakeLimits } from '../webhooks/intake-limits.js'

export interface ReadyAnswer {
  ready: boolean
  reason?: string
  [key: string]: unknown
}

export interface DaemonHttpOptions {
  webhookPath: string
  webhookHandler: (req: IncomingMessage, res: ServerResponse) => void
  /** The webhook intake's bounds: connection cap, header, body and request deadlines, keep-alive. */
  webhookLimits: IntakeLimits
  /** Counts each connection closed on arrival past the cap. */
  onDrop?: () => void
  /** May write to the mirror and sync it (the probe), hence a promise. */
  ready: () => Promise<ReadyAnswer>
  metrics: () => Promise<{ contentType: string; body: string }>
  logger: Logger
}

export function createDaemonServer(o: DaemonHttpOptions): Server {
  // One listener for the intake and the probes: the intake's bounds hold for all of it, and the
  // probes' connections count against the cap like any other.
  const server = createServer(intakeServerOptions(o.webhookLimits), (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (path === o.webhookPath) {
      o.webhookHandler(req, res)
      return
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
    json(res, 404, { error: `no route ${path}; try /healthz, /readyz, /metrics or ${o.webhookPath}` })
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
