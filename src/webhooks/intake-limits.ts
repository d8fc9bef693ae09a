// What bounds the webhook receiver against slow and hostile clients, for both listeners that
// serve the intake (the daemon's and the standalone one): a cap on open connections, a deadline to
// receive a body, a budget of body bytes held at once (see BodyBudget), and node:http's own header
// and request deadlines set for a webhook receiver instead of its 60 s and 300 s defaults.
import type { ServerOptions } from 'node:http'
import type { Server } from 'node:net'
import { INTAKE_LIMIT_DEFAULTS, type IntakeLimits } from '../config/intake-defaults.js'

export { INTAKE_LIMIT_DEFAULTS, type IntakeLimits }

/** A client has this long from its first byte to the end of its headers (node's default: 60 s). */
export const HEADERS_TIMEOUT_MS = 10_000
/** Past the body deadline, node:http's own cut-off for a whole request (its default: 300 s). */
const REQUEST_TIMEOUT_MARGIN_MS = 5_000
/**
 * Idle keep-alive connections stay open longer than the idle timeouts of the load balancers and
 * senders in front (60 s for the common ones): the side that closes first must be theirs, or a
 * request sent on a connection we just closed fails.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000
/** How often node:http looks for requests past their header or request deadline (its default: 30 s). */
const CONNECTIONS_CHECK_MS = 1_000

/** node:http options for a listener that serves the intake. */
export function intakeServerOptions(limits: Pick<IntakeLimits, 'bodyTimeoutMs'>): ServerOptions {
  // Our own body deadline answers first (and is counted); node's request timeout is the backstop
  // for a client slow in both its headers and its body.
  const requestTimeout = limits.bodyTimeoutMs + REQUEST_TIMEOUT_MARGIN_MS
  return {
    headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeout),
    requestTimeout,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
  }
}

/** Caps the listener's open connections; `onDrop` counts each connection refused. */
export function capConnections(server: Server, maxConnections: number, onDrop?: () => void): void {
  server.maxConnections = maxConnections
  if (onDrop !== undefined) server.on('drop', onDrop)
}
