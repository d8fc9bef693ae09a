import { describe, expect, test } from 'vitest'
import { AdaptiveLimit } from '../../../../src/api/governor/adaptive-limit.js'

describe('AdaptiveLimit', () => {
  test('cuts to what the headers leave us, then recovers a step per quiet minute', () => {
    const budget = new AdaptiveLimit({ limit: 60, recoverStep: 10, recoverEveryMs: 60_000, slack: 4 })
    // We sent 20, the server says 10 remain of 60: 30 went to someone else.
    expect(budget.observe({ at: 0, status: 200, ourStarts: 20, limitHeader: 60, remainingHeader: 10 })).toMatchObject({
      from: 60,
      to: 30,
      foreign: 30,
      reason: 'remaining-header',
    })
    expect(budget.recover(59_999)).toBe(false)
    expect(budget.recover(60_000)).toBe(true)
    expect(budget.effective).toBe(40)
    budget.recover(10 * 60_000)
    expect(budget.effective).toBe(60)
  })

  test('a difference within the slack (our requests in flight) is not taken for another client', () => {
    const budget = new AdaptiveLimit({ limit: 60, slack: 4 })
    expect(budget.observe({ at: 0, status: 200, ourStarts: 20, limitHeader: 60, remainingHeader: 37 })).toBeUndefined()
    expect(budget.effective).toBe(60)
  })

  test('a 429 while we were under budget takes what we actually got; at budget it backs off a tenth', () => {
    const under = new AdaptiveLimit({ limit: 60, slack: 4 })
    expect(under.observe({ at: 0, status: 429, ourStarts: 25 })?.to).toBe(25)
    const at = new AdaptiveLimit({ limit: 60, slack: 4 })
    expect(at.observe({ at: 0, status: 429, ourStarts: 60 })?.to).toBe(54)
  })

  test('a lower X-RateLimit-Limit becomes the ceiling; a higher one never raises it', () => {
    const budget = new AdaptiveLimit({ limit: 60 })
    expect(budget.observe({ at: 0, status: 200, ourStarts: 1, limitHeader: 30 })?.to).toBe(30)
    budget.observe({ at: 1, status: 200, ourStarts: 1, limitHeader: 600 })
    budget.recover(3_600_000)
    expect(budget.effective).toBe(60)
    expect(budget.ceiling).toBe(60)
  })

  test('never below the floor', () => {
    const budget = new AdaptiveLimit({ limit: 60, minLimit: 5 })
    budget.observe({ at: 0, status: 200, ourStarts: 0, limitHeader: 60, remainingHeader: 0 })
    expect(budget.effective).toBe(5)
  })
})
