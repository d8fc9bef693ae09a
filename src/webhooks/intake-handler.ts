// The intake of webhook deliveries, a node:http request handler the daemon mounts at
// `webhooks.path`. Order of checks (docs/guarantees.md, Acknowledged means stored; the API's
// specification, Events, Delivery format): bytes under the cap (413), signature over those exact
// bytes (401), event and delivery headers and a JSON object body (400), then stored durably in the
// inbox, and only then 200. Never 410: senders take it as "disable this endpoint". Store
// unavailable or backlog full: 503 with a clear log line.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from '../log/logger.js'
import { InboxUnavailableError, type Delivery, type EnqueueResult } from './inbox.js'
import { BodyBudget } from './body-budget.js'
import type { WebhookMetrics } from './metrics.js'
import { readRawBody, type RawBody } from './raw-body.js'
import { verifySignature, type ActiveSecret } from './signature.js'

export interface IntakeHandlerOptions {
  inbox: { enqueue(delivery: Delivery): Promise<EnqueueResult> }
  /** Secrets accepted now (see `secretSource`); read once per event-loop turn that has requests. */
  secrets: () => readonly ActiveSecret[]
  /**
   * Reads the secrets afresh when none of `secrets()` verified a delivery (a replica verifying for
   * an account it does not own, from a cache: a rotation may not have reached it yet).
   */
  refreshSecrets?: () => Promise<readonly ActiveSecret[]>
  /** Body cap in bytes (webhooks.maxBodyBytes, 1 MiB by default). */
  maxBodyBytes: number
  /** Deadline to receive a whole body (webhooks.bodyTimeoutMs): 408 past it. */
  bodyTimeoutMs: number
  /** Body bytes held at once across requests (webhooks.maxBufferedBytes): 503 past it. */
  maxBufferedBytes: number
  /** The budget those bytes are held in, when shared (the daemon's: an account's share of the process's); default its own of maxBufferedBytes. */
  budget?: BodyBudget
  logger: Logger
  /** The process's clock, for spacing repeated log lines. */
  now: () => number
  metrics?: WebhookMetrics
}

export type IntakeHandler = (req: IncomingMessage, res: ServerResponse) => void

/** Longest delivery id kept; the upstream's ids are 24 hex characters. */
const MAX_ID_LENGTH = 200

export function createIntakeHandler(options: IntakeHandlerOptions): IntakeHandler {
  const log = options.logger.child({ component: 'webhook-intake' })
  const metrics = options.metrics
  let lastNoSecretLog = 0
  const budget = options.budget ?? new BodyBudget(options.maxBufferedBytes)
  const bodyTimeoutMs = options.bodyTimeoutMs
  const refusals = { timeout: { count: 0, loggedAt: 0 }, 'over-budget': { count: 0, loggedAt: 0 } }
  // The requests completing in one turn share one read of the secrets: under load that turns a
  // store lookup per request (a stat of the secrets file at least) into one per turn, and a secret stored
  // by another process is still seen by the next turn's requests.
  let turnSecrets: readonly ActiveSecret[] | undefined
  const currentSecrets = (): readonly ActiveSecret[] => {
    if (turnSecrets === undefined) {
      turnSecrets = options.secrets()
      setImmediate(() => (turnSecrets = undefined))
    }
    return turnSecrets
  }
  return (req, res) => {
    void handle(req, res).catch((err: unknown) => {
      log.error({ err }, 'webhook intake failed unexpectedly: answered 503')
      if (!res.headersSent) reply(res, 503, 'intake failed')
    })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') {
      if (metrics) metrics.intake.methodNotAllowed++
      reply(res, 405, 'POST only', { allow: 'POST' })
      return
    }
    const read = await readRawBody(req, options.maxBodyBytes, { budget, deadlineMs: bodyTimeoutMs, heldUntil: res })
    if (!read.ok) {
      if (read.reason !== 'aborted') refuseBody(req, res, read.reason)
      return
    }
    const deliveryId = header(req, 'x-service-delivery')
    const event = header(req, 'x-service-event')
    let secrets: readonly ActiveSecret[]
    try {
      secrets = currentSecrets()
    } catch (err) {
      unavailable(res, err, deliveryId)
      return
    }
    let verified = verifySignature(read.body, req.headers['x-service-signature'], secrets)
    if (!verified.ok && (verified.reason === 'mismatch' || verified.reason === 'no-secret') && options.refreshSecrets !== undefined) {
      try {
        verified = verifySignature(read.body, req.headers['x-service-signature'], await options.refreshSecrets())
      } catch (err) {
        unavailable(res, err, deliveryId)
        return
      }
    }
    if (!verified.ok) {
      if (metrics) metrics.intake.unauthorized++
      if (verified.reason === 'no-secret') {
        const now = options.now()
        if (now - lastNoSecretLog > 60_000) {
          lastNoSecretLog = now
          log.error(
            'webhook delivery refused: no signing secret is configured; run `fsm-sync webhooks register --url URL` or set FSM_WEBHOOK_SECRETS',
          )
        }
      } else {
        log.warn(
          { deliveryId, event, reason: verified.reason },
          'webhook delivery refused: signature missing or not matching any active secret (401)',
        )
      }
      reply(res, 401, 'signature missing or invalid')
      return
    }
    if (deliveryId === undefined || event === undefined) {
      badRequest(res, 'X-Service-Event and X-Service-Delivery headers are required', deliveryId, event)
      return
    }
    if (deliveryId.length > MAX_ID_LENGTH) {
      // Only the length is logged: an id this long is not one the upstream sends.
      badRequest(
        res,
        `X-Service-Delivery is ${deliveryId.length} characters long; at most ${MAX_ID_LENGTH} are accepted (the upstream's ids are 24)`,
        undefined,
        event,
      )
      return
    }
    if (!isJsonObject(read.body)) {
      badRequest(res, 'the body is not a JSON object', deliveryId, event)
      return
    }
    let result: EnqueueResult
    try {
      result = await options.inbox.enqueue({ deliveryId, event, body: read.body, verifiedWith: verified.label })
    } catch (err) {
      unavailable(res, err, deliveryId)
      return
    }
    if (metrics) metrics.intake[result === 'stored' ? 'stored' : 'duplicate']++
    if (result === 'duplicate') log.debug({ deliveryId, event }, 'webhook delivery seen before: nothing changes')
    const body = result === 'duplicate' ? DUPLICATE_BODY : RECEIVED_BODY
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
    res.end(body)
  }

  /** The rest of the body is never read: the answer says why, then the connection closes. */
  function refuseBody(req: IncomingMessage, res: ServerResponse, reason: Exclude<(RawBody & { ok: false })['reason'], 'aborted'>): void {
    if (reason === 'too-large') {
      if (metrics) metrics.intake.tooLarge++
      log.warn({ maxBodyBytes: options.maxBodyBytes }, 'webhook delivery refused: body over the cap (413)')
      reply(res, 413, `body over ${options.maxBodyBytes} bytes`, { connection: 'close' })
    } else {
      if (metrics) metrics.intake[reason === 'timeout' ? 'bodyTimeout' : 'bufferFull']++
      // Under an attack these come by the thousand: one line per reason every 10 s, with the count.
      const r = refusals[reason]
      r.count++
      const now = options.now()
      if (now - r.loggedAt >= 10_000) {
        if (reason === 'timeout')
          log.warn(
            { bodyTimeoutMs, refusedSinceLastLine: r.count },
            'webhook requests refused: body not received within webhooks.bodyTimeoutMs (408); a slow or hostile client',
          )
        else
          log.warn(
            { bufferedBytesLimit: budget.limit, refusedSinceLastLine: r.count },
            "webhook requests refused: bodies in memory would pass webhooks.maxBufferedBytes, or this account's share of it (503); many large or slow bodies at once",
          )
        r.loggedAt = now
        r.count = 0
      }
      if (res.headersSent || !res.writable) {
        req.destroy()
        return
      }
      if (reason === 'timeout') reply(res, 408, `body not received within ${bodyTimeoutMs} ms`, { connection: 'close' })
      else reply(res, 503, 'too many request bodies in memory; retry later', { connection: 'close' })
    }
    res.once('finish', () => req.destroy())
  }

  function badRequest(res: ServerResponse, message: string, deliveryId: string | undefined, event: string | undefined): void {
    if (metrics) metrics.intake.badRequest++
    log.warn({ deliveryId, event }, `webhook delivery refused (400): ${message}`)
    reply(res, 400, message)
  }

  function unavailable(res: ServerResponse, err: unknown, deliveryId: string | undefined): void {
    if (metrics) metrics.intake.unavailable++
    const code = err instanceof InboxUnavailableError ? err.code : 'INBOX_WRITE_FAILED'
    log.error(
      { deliveryId, code, err },
      'webhook delivery not stored: answered 503; the sender does not retry, so the next sweep must recover the change',
    )
    reply(res, 503, 'the webhook inbox is unavailable')
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

function isJsonObject(body: Buffer): boolean {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}

// The answers of the hot path, built once (ASCII: length in characters is length in bytes).
const RECEIVED_BODY = JSON.stringify({ received: true })
const DUPLICATE_BODY = JSON.stringify({ received: true, duplicate: true })

function reply(res: ServerResponse, status: number, error: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ error })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers })
  res.end(body)
}
