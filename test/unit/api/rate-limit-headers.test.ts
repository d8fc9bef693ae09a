// Retry-After / X-RateLimit-Reset in every form they may take (the API's specification does not
// show which).
import { describe, expect, test } from 'vitest'
import { parseResetHeader, readRateLimitHeaders } from '../../../src/api/rate-limit-headers.js'

const now = Date.UTC(2025, 5, 1, 12, 0, 0)

describe('parseResetHeader', () => {
  test.each([
    ['30', 30_000, 'seconds-until'],
    ['0', 0, 'seconds-until'],
    ['1.5', 1_500, 'seconds-until'],
    [String(now / 1000 + 42), 42_000, 'epoch-seconds'],
    [String(now + 4_200), 4_200, 'epoch-ms'],
    [new Date(now + 17_000).toUTCString(), 17_000, 'date'],
    [new Date(now + 5_000).toISOString(), 5_000, 'date'],
    [String(now / 1000 - 100), 0, 'epoch-seconds'],
  ])('%s -> %i ms (%s)', (value, waitMs, form) => {
    expect(parseResetHeader(value, now)).toEqual({ waitMs, form })
  })

  test.each([undefined, '', 'soon', '-5'])('%s is no known form', (value) => {
    expect(parseResetHeader(value, now)).toBeUndefined()
  })

  test('absolute forms are read against the server clock when it is skewed', () => {
    const serverNow = now + 3_600_000 // server an hour ahead
    expect(parseResetHeader(String(serverNow / 1000 + 10), now, serverNow)).toEqual({ waitMs: 10_000, form: 'epoch-seconds' })
    expect(parseResetHeader('10', now, serverNow)).toEqual({ waitMs: 10_000, form: 'seconds-until' })
  })
})

describe('readRateLimitHeaders', () => {
  test('prefers Retry-After and reads the counts', () => {
    const h = readRateLimitHeaders(
      { 'retry-after': '3', 'x-ratelimit-reset': '99', 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0' },
      now,
    )
    expect(h).toEqual({ limit: 60, remaining: 0, retryAfter: { waitMs: 3_000, form: 'seconds-until', header: 'retry-after' } })
  })

  test('falls back to X-RateLimit-Reset; ignores junk counts', () => {
    const h = readRateLimitHeaders({ 'x-ratelimit-reset': String(now + 2_000), 'x-ratelimit-remaining': 'many' }, now)
    expect(h).toEqual({ retryAfter: { waitMs: 2_000, form: 'epoch-ms', header: 'x-ratelimit-reset' } })
  })
})
