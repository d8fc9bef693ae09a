// Per-key sliding 60-second window (spec: Limits, "60 requests per minute per key, sliding
// window"): a request is refused when the key already made `limit` requests in the last 60 s.
// Refused requests do not count. On 429: X-RateLimit-Limit, X-RateLimit-Remaining (0),
// X-RateLimit-Reset as epoch SECONDS of the instant a slot frees, and Retry-After in seconds.
import { HttpError } from '../core/http-error.js'

const WINDOW_MS = 60_000

export class RateLimiter {
  private readonly hits = new Map<string, number[]>()

  /** Records a request, or throws the 429 answer. `limit` null means unlimited. */
  take(keyId: string, limit: number | null, nowMs: number): void {
    if (limit === null) return
    let list = this.hits.get(keyId)
    if (list === undefined) {
      list = []
      this.hits.set(keyId, list)
    }
    let drop = 0
    while (drop < list.length && list[drop]! <= nowMs - WINDOW_MS) drop++
    if (drop > 0) list.splice(0, drop)
    if (list.length >= limit) {
      const freesAt = (list[list.length - limit] ?? nowMs) + WINDOW_MS
      throw rateLimited(limit, freesAt, nowMs)
    }
    list.push(nowMs)
  }

  reset(): void {
    this.hits.clear()
  }
}

export function rateLimited(limit: number, freesAtMs: number, nowMs: number): HttpError {
  const retryAfter = Math.max(1, Math.ceil((freesAtMs - nowMs) / 1000))
  return new HttpError(
    429,
    `Rate limit exceeded: ${limit} requests per minute. Retry after ${retryAfter} s.`,
    'RATE_LIMITED',
    {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.ceil(freesAtMs / 1000)),
      'retry-after': String(retryAfter),
    },
    'auth',
  )
}
