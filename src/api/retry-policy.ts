// When to try a request again: the spec's Errors section, as a pure function.
// - 5xx, network errors and 429: up to three retries, waiting 1, 2 and 4 s, or what Retry-After /
//   X-RateLimit-Reset say when present.
// - Never any other 4xx.
// - POST creates and triggers are not idempotent (no idempotency header exists; a retried create
//   makes a duplicate), so a POST is retried only when it provably never reached the server: a
//   429 (turned away by the rate limiter before the handler ran) or a failure to connect. A POST that
//   met a 5xx, a reset connection or a timeout may have been applied: it is surfaced, not repeated.

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export type AttemptOutcome =
  | { kind: 'status'; status: number; retryAfterMs?: number | undefined }
  | { kind: 'network'; reachedServer: boolean; retryAfterMs?: undefined }

export type RetryDecision = { retry: true; delayMs: number; reason: string } | { retry: false; reason: string }

export interface RetryPolicy {
  /** Retries after the first attempt. Default 3. */
  maxRetries: number
  /** Wait before retry n (1-based) when the server names none. Default 1, 2, 4 s. */
  delaysMs: readonly number[]
  /** Upper bound of any wait, a guard against a misread header. Default 5 minutes. */
  maxDelayMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 3, delaysMs: [1_000, 2_000, 4_000], maxDelayMs: 300_000 }

export function isIdempotent(method: HttpMethod): boolean {
  return method !== 'POST'
}

/** True for outcomes where a later attempt may succeed (429, 5xx, network). */
export function isTransient(outcome: AttemptOutcome): boolean {
  return outcome.kind === 'network' || outcome.status === 429 || outcome.status >= 500
}

/** Decides after the failed attempt number `attempt` (1 = the first try). */
export function retryDecision(
  attempt: number,
  outcome: AttemptOutcome,
  method: HttpMethod,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): RetryDecision {
  if (outcome.kind === 'status' && outcome.status < 400) return { retry: false, reason: 'not a failure' }
  if (!isTransient(outcome)) return { retry: false, reason: 'client error: never retried' }
  if (attempt > policy.maxRetries) return { retry: false, reason: `gave up after ${attempt} attempts` }
  const neverReached = outcome.kind === 'network' ? !outcome.reachedServer : outcome.status === 429
  if (!isIdempotent(method) && !neverReached) {
    return { retry: false, reason: 'a non-idempotent request may have been applied: not retried' }
  }
  const fallback = policy.delaysMs[Math.min(attempt, policy.delaysMs.length) - 1] ?? 1_000
  const delayMs = Math.min(policy.maxDelayMs, Math.max(0, outcome.retryAfterMs ?? fallback))
  const reason = outcome.kind === 'network' ? 'network error' : `status ${outcome.status}`
  return { retry: true, delayMs, reason }
}
