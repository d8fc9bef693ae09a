// Outbound deliveries (spec: Events, Delivery format and Retry schedule). The body is the payload
// itself (no envelope), signed with lowercase hex HMAC-SHA256 of the exact body under the
// endpoint's secret. One attempt: 2xx -> `success`; otherwise `retrying` with the next attempt
// time recorded, and (as the spec says of the real service, whose retry sweep is not running)
// never re-sent. Deliveries to one endpoint leave in event order.
import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import { iso } from '../core/iso-time.js'
import type { EventName } from '../data/account-config.js'
import type { Delivery, WebhookStore } from './webhook-store.js'

export const DELIVERY_TIMEOUT_MS = 30_000
/** Attempt 2 one minute after the first failure (spec: Retry schedule). */
const FIRST_RETRY_MS = 60_000

export const sign = (secret: string, body: string): string => createHmac('sha256', secret).update(body).digest('hex')

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])
export const isLoopbackHost = (host: string): boolean => LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host)

interface AttemptResult {
  code: number | null
  error: string | null
}

function post(url: URL, body: string, headers: Record<string, string>): Promise<AttemptResult> {
  const lib = url.protocol === 'https:' ? https : http
  return new Promise((resolve) => {
    const req = lib.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        timeout: DELIVERY_TIMEOUT_MS,
        // Loopback receivers in tests use self-signed certificates.
        ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ code: res.statusCode ?? null, error: null }))
        res.on('error', (err) => resolve({ code: res.statusCode ?? null, error: err.message }))
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`)))
    req.on('error', (err) => resolve({ code: null, error: err.message }))
    req.end(body)
  })
}

export class Dispatcher {
  private readonly chains = new Map<string, Promise<void>>()
  sent = 0
  succeeded = 0
  failed = 0

  constructor(
    private readonly store: WebhookStore,
    private readonly now: () => number,
  ) {}

  emit(event: EventName, payload: unknown): void {
    for (const endpoint of this.store.endpoints.values()) {
      if (!endpoint.isActive || !endpoint.events.includes(event)) continue
      const nowMs = this.now()
      const delivery: Delivery = {
        id: randomUUID(),
        endpointId: endpoint.id,
        event,
        status: 'pending',
        attempts: 0,
        responseCode: null,
        errorMessage: null,
        duration: null,
        createdAt: iso(nowMs),
        createdMs: nowMs,
        lastAttemptAt: null,
        nextAttemptAt: null,
      }
      this.store.deliveries.set(delivery.id, delivery)
      const body = JSON.stringify(payload)
      const headers = {
        'content-type': 'application/json',
        'x-service-event': event,
        'x-service-delivery': delivery.id,
        'x-service-signature': sign(endpoint.secret, body),
      }
      const url = endpoint.url
      const previous = this.chains.get(endpoint.id) ?? Promise.resolve()
      const next = previous.then(() => this.attempt(delivery, url, body, headers))
      this.chains.set(endpoint.id, next)
      void next.finally(() => {
        if (this.chains.get(endpoint.id) === next) this.chains.delete(endpoint.id)
      })
    }
  }

  private async attempt(delivery: Delivery, rawUrl: string, body: string, headers: Record<string, string>): Promise<void> {
    const url = new URL(rawUrl)
    const started = performance.now()
    // The emulator never reaches beyond this machine: other hosts fail like a network error.
    const result = isLoopbackHost(url.hostname)
      ? await post(url, body, headers)
      : { code: null, error: 'the emulator delivers to loopback receivers only' }
    const at = this.now()
    this.sent++
    delivery.attempts = 1
    delivery.duration = Math.round(performance.now() - started)
    delivery.lastAttemptAt = iso(at)
    delivery.responseCode = result.code
    if (result.code !== null && result.code >= 200 && result.code < 300) {
      delivery.status = 'success'
      this.succeeded++
    } else {
      delivery.status = 'retrying'
      delivery.errorMessage = result.error ?? `receiver answered ${String(result.code)}`
      delivery.nextAttemptAt = iso(at + FIRST_RETRY_MS)
      this.failed++
    }
  }

  /** Resolves when every delivery queued so far has been attempted. */
  async flush(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()])
  }
}
