// A minimal node:http server that routes the webhook path to the intake handler and answers 404
// elsewhere. The daemon (src/daemon) mounts the handler in its own server beside /healthz and
// /metrics; this one serves tests, the bench and anyone running intake alone.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { IntakeHandler } from './intake-handler.js'
import { INTAKE_LIMIT_DEFAULTS, capConnections, intakeServerOptions, type IntakeLimits } from './intake-limits.js'

export interface IntakeServer {
  url: string
  port: number
  close(): Promise<void>
}

export interface IntakeServerOptions {
  path: string
  host?: string
  port?: number
  /** The service's limits (`WebhookService.limits`); INTAKE_LIMIT_DEFAULTS when left out. */
  limits?: IntakeLimits
  /** Counts each connection closed on arrival past `limits.maxConnections`. */
  onDrop?: () => void
}

export async function startIntakeServer(handler: IntakeHandler, options: IntakeServerOptions): Promise<IntakeServer> {
  const limits = options.limits ?? INTAKE_LIMIT_DEFAULTS
  const server = http.createServer(intakeServerOptions(limits), (req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    if (path === options.path) {
      handler(req, res)
      return
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }))
  })
  capConnections(server, limits.maxConnections, options.onDrop)
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${options.path}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        server.closeAllConnections()
      }),
  }
}
