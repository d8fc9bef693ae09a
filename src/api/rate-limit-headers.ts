// Reading Retry-After and X-RateLimit-* tolerantly. The API's specification names the headers but
// does not show their forms: X-RateLimit-Reset may be epoch seconds, epoch milliseconds, seconds
// until the reset, or an HTTP date; Retry-After seconds or an HTTP date. One parser takes them all.
import { parseInstant } from '../model/timestamps.js'

export type ResetForm = 'seconds-until' | 'epoch-seconds' | 'epoch-ms' | 'date'

export interface ParsedReset {
  /** Milliseconds to wait from now (never negative). */
  waitMs: number
  form: ResetForm
}

// Any plausible epoch in seconds is above 1e9 (2001); in milliseconds above 1e12 (2001). A delay of
// a billion seconds is not plausible, so the magnitude tells the forms apart.
const EPOCH_SECONDS_MIN = 1e9
const EPOCH_MS_MIN = 1e12
// Servers whose clock is this far from ours get their own Date header used as "now".
const SKEW_TOLERANCE_MS = 2_000

/**
 * Parses one Retry-After or X-RateLimit-Reset value into a wait from `nowMs`. Absolute forms are
 * read against the server's clock when its `Date` header shows a skew of more than two seconds.
 * Returns undefined for a value in no known form.
 */
export function parseResetHeader(value: string | undefined, nowMs: number, serverDateMs?: number): ParsedReset | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (text === '') return undefined
  const serverNow = serverDateMs !== undefined && Math.abs(serverDateMs - nowMs) > SKEW_TOLERANCE_MS ? serverDateMs : nowMs
  if (/^\d+(\.\d+)?$/.test(text)) {
    const n = Number(text)
    if (n >= EPOCH_MS_MIN) return { waitMs: Math.max(0, n - serverNow), form: 'epoch-ms' }
    if (n >= EPOCH_SECONDS_MIN) return { waitMs: Math.max(0, n * 1000 - serverNow), form: 'epoch-seconds' }
    return { waitMs: Math.ceil(n * 1000), form: 'seconds-until' }
  }
  // An HTTP date (has a weekday and month name) or an ISO timestamp; not any string Date.parse takes.
  if (!/[a-z]/i.test(text) && !/^\d{4}-\d{2}-\d{2}/.test(text)) return undefined
  const at = parseInstant(text)
  if (Number.isNaN(at)) return undefined
  return { waitMs: Math.max(0, at - serverNow), form: 'date' }
}

/** A non-negative integer header such as X-RateLimit-Remaining; undefined when absent or odd. */
export function parseCountHeader(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const text = value.trim()
  if (!/^\d+$/.test(text)) return undefined
  return Number(text)
}

export interface RateLimitHeaders {
  limit?: number
  remaining?: number
  /** Wait before the next request, from Retry-After or else X-RateLimit-Reset. */
  retryAfter?: ParsedReset & { header: 'retry-after' | 'x-ratelimit-reset' }
}

type HeaderBag = Record<string, string | string[] | undefined>

export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** Reads the rate-limit headers of one answer (header names in lower case, as undici gives them). */
export function readRateLimitHeaders(headers: HeaderBag, nowMs: number): RateLimitHeaders {
  const out: RateLimitHeaders = {}
  const limit = parseCountHeader(headerValue(headers, 'x-ratelimit-limit'))
  const remaining = parseCountHeader(headerValue(headers, 'x-ratelimit-remaining'))
  if (limit !== undefined) out.limit = limit
  if (remaining !== undefined) out.remaining = remaining
  const dateHeader = headerValue(headers, 'date')
  const serverDate = dateHeader === undefined ? Number.NaN : parseInstant(dateHeader)
  const serverNow = Number.isNaN(serverDate) ? undefined : serverDate
  const retryAfter = parseResetHeader(headerValue(headers, 'retry-after'), nowMs, serverNow)
  if (retryAfter !== undefined) {
    out.retryAfter = { ...retryAfter, header: 'retry-after' }
  } else {
    const reset = parseResetHeader(headerValue(headers, 'x-ratelimit-reset'), nowMs, serverNow)
    if (reset !== undefined) out.retryAfter = { ...reset, header: 'x-ratelimit-reset' }
  }
  return out
}
