// A budget share (the continuous sweeps') never starts more than its fraction of the effective
// limit in any guarded window, leaves the rest to the other callers, and shrinks with the adaptive
// limit when another client spends the key. Fake time: minutes in milliseconds.
import { describe, expect, test } from 'vitest'
import { FakeClock } from '../../../support/fake-clock.js'
import { BudgetShare, RequestGovernor, type Priority } from '../../../../src/api/governor/index.js'

/** Most starts in any span of `spanMs` (`times` sorted). */
function maxInSpan(times: readonly number[], spanMs: number): number {
  let most = 0
  let lo = 0
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= spanMs) lo++
    most = Math.max(most, hi - lo + 1)
  }
  return most
}

/** Callers that take a slot again as soon as they got one, until `endAt`. */
function busyCallers(n: number, clock: FakeClock, endAt: number, take: () => Promise<{ startedAt: number; release(): void }>): number[] {
  const starts: number[] = []
  for (let i = 0; i < n; i++)
    void (async () => {
      while (clock.now() < endAt) {
        const slot = await take()
        starts.push(slot.startedAt)
        // The answer takes a little while.
        await clock.sleep(150)
        slot.release()
      }
    })()
  return starts
}

async function runFor(clock: FakeClock, ms: number): Promise<void> {
  const end = clock.now() + ms
  while (clock.now() < end) await clock.advance(50)
}

describe('BudgetShare', () => {
  test('0.85 of 60/min: the share starts at most 51 in any window, the other callers get the rest', async () => {
    const clock = new FakeClock()
    const governor = new RequestGovernor({ clock, limitPerMinute: 60 })
    const share = new BudgetShare(governor, { fraction: 0.85, clock })
    expect(share.limit).toBe(51)
    const end = clock.now() + 5 * 60_000
    // Three sweepers at once, and triggers and a reconciliation that want everything too: they rank
    // below sweeps, so without the share the sweeps would leave them nothing.
    const swept = busyCallers(3, clock, end, () => share.acquire('sweep'))
    const others = (['trigger', 'reconcile'] as Priority[]).map((p) => busyCallers(1, clock, end, () => governor.acquire(p)))
    await runFor(clock, 5 * 60_000 + 5_000)
    const all = [...swept, ...others.flat()].sort((a, b) => a - b)
    expect(maxInSpan(swept, governor.guardedWindowMs)).toBeLessThanOrEqual(51)
    expect(maxInSpan(all, governor.guardedWindowMs)).toBeLessThanOrEqual(60)
    // The share is used (within a few of its limit each minute) and the others get the rest.
    expect(swept.length).toBeGreaterThanOrEqual(5 * 51 - 5)
    expect(others.flat().length).toBeGreaterThanOrEqual(5 * 9 - 5)
    expect(share.startsInWindow()).toBeLessThanOrEqual(51)
  })

  test('the share is paced, not a burst: one start per window/limit after the first two', async () => {
    const clock = new FakeClock()
    const governor = new RequestGovernor({ clock, limitPerMinute: 60 })
    const share = new BudgetShare(governor, { fraction: 0.5, clock })
    const swept = busyCallers(2, clock, clock.now() + 30_000, () => share.acquire('sweep'))
    await runFor(clock, 30_000)
    const gaps = swept.slice(2).map((t, i) => t - swept[i + 1]!)
    const spacing = governor.guardedWindowMs / 30
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(Math.floor(spacing) - 1)
  })

  test('another client on the key: the effective limit drops and the share with it; sweeping slows, never overruns', async () => {
    const clock = new FakeClock()
    const governor = new RequestGovernor({ clock, limitPerMinute: 60, recoverEveryMs: 10 * 60_000 })
    const share = new BudgetShare(governor, { fraction: 0.85, clock })
    // The server says 30 of 60 remain although we sent nothing: someone else spent 30.
    governor.observe({ startedAt: clock.now(), at: clock.now(), status: 200, limitHeader: 60, remainingHeader: 30 })
    expect(governor.state().effectiveLimit).toBe(30)
    expect(share.limit).toBe(25)
    const swept = busyCallers(2, clock, clock.now() + 3 * 60_000, () => share.acquire('sweep'))
    await runFor(clock, 3 * 60_000)
    expect(maxInSpan(swept, governor.guardedWindowMs)).toBeLessThanOrEqual(25)
    expect(swept.length).toBeGreaterThanOrEqual(3 * 25 - 3)
  })

  test('a waiting request removed by its signal lets the next one through', async () => {
    const clock = new FakeClock()
    const governor = new RequestGovernor({ clock, limitPerMinute: 60, burst: 1 })
    const share = new BudgetShare(governor, { fraction: 0.05, clock })
    expect(share.limit).toBe(3)
    ;(await share.acquire('sweep')).release()
    const controller = new AbortController()
    const aborted = share.acquire('sweep', controller.signal)
    const next = share.acquire('sweep')
    controller.abort(new Error('stop'))
    await expect(aborted).rejects.toThrow('stop')
    await clock.advance(governor.guardedWindowMs / 3)
    expect((await next).startedAt).toBeGreaterThan(0)
  })

  test("the clock steps back an hour: the share's starts still count, and sweeping goes on within a window, not an hour later", async () => {
    const clock = new FakeClock()
    const governor = new RequestGovernor({ clock, limitPerMinute: 60 })
    const share = new BudgetShare(governor, { fraction: 0.5, clock })
    const before = busyCallers(2, clock, clock.now() + 60_000, () => share.acquire('sweep'))
    await runFor(clock, 61_000)
    expect(before.length).toBeGreaterThanOrEqual(25)
    const steppedAt = clock.now()
    clock.jump(-3_600_000)
    const back = clock.now()
    // Starts made "in the future" of the new clock count as made now: the budget still holds.
    expect(share.startsInWindow()).toBeGreaterThan(0)
    const after = busyCallers(2, clock, back + 2 * 60_000, () => share.acquire('sweep'))
    await runFor(clock, 2 * 60_000)
    expect(after.length).toBeGreaterThan(0)
    expect(after[0]! - back).toBeLessThanOrEqual(governor.guardedWindowMs)
    // No guarded window of the new clock holds more than the share's limit, the starts still in the
    // window when the clock stepped carried to the new time.
    const carried = before.filter((t) => t > steppedAt - governor.guardedWindowMs).map(() => back)
    expect(
      maxInSpan(
        [...carried, ...after].sort((a, b) => a - b),
        governor.guardedWindowMs,
      ),
    ).toBeLessThanOrEqual(30)
    // Without the fix the share would wait for the clock to catch up: an hour with no start.
    expect(after.length).toBeGreaterThanOrEqual(30)
  })

  test('a fraction outside (0, 1] is refused', () => {
    const governor = new RequestGovernor({ limitPerMinute: 60 })
    expect(() => new BudgetShare(governor, { fraction: 0, clock: new FakeClock() })).toThrow(RangeError)
    expect(() => new BudgetShare(governor, { fraction: 1.2, clock: new FakeClock() })).toThrow(RangeError)
  })
})
