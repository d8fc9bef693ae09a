// Two processes on one mirror (the daemon and a cron `reconcile`) share the key's window. The
// rate-limit headers count both; the adaptive limit must take both as ours and react only to
// clients outside the mirror, or each process takes the other for a foreign client and both drop.
import { describe, expect, test } from 'vitest'
import { FakeClock } from '../../../support/fake-clock.js'
import { RequestGovernor, type SharedWindow } from '../../../../src/api/governor/request-governor.js'

/** The mirror's request_starts in memory: every process's starts. */
function sharedWindow(clock: FakeClock, starts: number[]): SharedWindow {
  return {
    claim: (limit, windowMs) => {
      const now = clock.now()
      const inWindow = starts.filter((t) => t > now - windowMs).sort((a, b) => a - b)
      if (inWindow.length >= limit) return { granted: false, retryAt: inWindow[inWindow.length - limit]! + windowMs }
      starts.push(now)
      return { granted: true }
    },
    startsSince: (from) => starts.filter((t) => t > from).length,
  }
}

describe('the adaptive limit with a sibling process on the same mirror', () => {
  test("headers that count only this mirror's two processes do not lower the limit", async () => {
    const clock = new FakeClock()
    const t0 = clock.now()
    // The sibling process started 30 requests in the last 30 s.
    const starts = Array.from({ length: 30 }, (_, i) => t0 - 30_000 + i * 1_000)
    const governor = new RequestGovernor({ limitPerMinute: 60, clock, shared: sharedWindow(clock, starts) })
    const slot = await governor.acquire('sweep')
    // The server saw 31 starts on the key: the sibling's 30 and this one.
    const change = governor.observe({ startedAt: slot.startedAt, at: clock.now(), status: 200, limitHeader: 60, remainingHeader: 29 })
    slot.release()
    expect(change).toBeUndefined()
    expect(governor.state().effectiveLimit).toBe(60)
  })

  test('a client outside the mirror still lowers it by what it spent', async () => {
    const clock = new FakeClock()
    const t0 = clock.now()
    const starts = Array.from({ length: 30 }, (_, i) => t0 - 30_000 + i * 1_000)
    const governor = new RequestGovernor({ limitPerMinute: 60, clock, shared: sharedWindow(clock, starts) })
    const slot = await governor.acquire('sweep')
    // 31 of ours on the key plus 20 by someone else.
    const change = governor.observe({ startedAt: slot.startedAt, at: clock.now(), status: 200, limitHeader: 60, remainingHeader: 9 })
    slot.release()
    expect(change).toMatchObject({ from: 60, to: 40, foreign: 20, reason: 'remaining-header' })
  })
})
