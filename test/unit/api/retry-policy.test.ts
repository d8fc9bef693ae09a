// The spec's Errors section as a table: what is retried, after how long, and never a blind create.
import { describe, expect, test } from 'vitest'
import { retryDecision, type AttemptOutcome, type HttpMethod } from '../../../src/api/retry-policy.js'

const status = (s: number, retryAfterMs?: number): AttemptOutcome => ({ kind: 'status', status: s, retryAfterMs })
const refused: AttemptOutcome = { kind: 'network', reachedServer: false }
const reset: AttemptOutcome = { kind: 'network', reachedServer: true }

type Row = [attempt: number, outcome: AttemptOutcome, method: HttpMethod, expected: number | 'no']

const table: Row[] = [
  // 5xx and network errors: 1, 2, 4 s, then give up.
  [1, status(500), 'GET', 1_000],
  [2, status(502), 'GET', 2_000],
  [3, status(503), 'GET', 4_000],
  [4, status(504), 'GET', 'no'],
  [1, reset, 'GET', 1_000],
  [3, reset, 'PUT', 4_000],
  [1, status(500), 'PUT', 1_000],
  [1, status(500), 'PATCH', 1_000],
  [1, status(500), 'DELETE', 1_000],
  // 429: retried for every method, honouring Retry-After / X-RateLimit-Reset.
  [1, status(429), 'GET', 1_000],
  [2, status(429, 7_500), 'GET', 7_500],
  [1, status(429, 3_000), 'POST', 3_000],
  [4, status(429), 'POST', 'no'],
  [1, status(503, 9_000), 'GET', 9_000],
  // Never any other 4xx.
  [1, status(400), 'GET', 'no'],
  [1, status(401), 'GET', 'no'],
  [1, status(403), 'GET', 'no'],
  [1, status(404), 'GET', 'no'],
  [1, status(409), 'POST', 'no'],
  [1, status(422), 'PUT', 'no'],
  // A create is retried only when it provably never reached the server.
  [1, status(500), 'POST', 'no'],
  [1, status(503), 'POST', 'no'],
  [1, reset, 'POST', 'no'],
  [1, refused, 'POST', 1_000],
  [2, refused, 'POST', 2_000],
  // Not failures at all.
  [1, status(200), 'GET', 'no'],
  [1, status(201), 'POST', 'no'],
]

describe('retryDecision', () => {
  test.each(table)('attempt %i, %j, %s -> %s', (attempt, outcome, method, expected) => {
    const decision = retryDecision(attempt, outcome, method)
    if (expected === 'no') expect(decision.retry).toBe(false)
    else expect(decision).toMatchObject({ retry: true, delayMs: expected })
  })

  test('a misread header cannot park a request for hours', () => {
    expect(retryDecision(1, status(429, 86_400_000), 'GET')).toMatchObject({ retry: true, delayMs: 300_000 })
  })
})
