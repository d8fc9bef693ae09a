// A wall clock that steps back (NTP, a VM restored from a snapshot) inside one process: the starts
// already made and the pacing time lie in the future of the new clock. They must count as made
// now (the budget still holds), and must not hold every start for as long as the step.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { GovernorCore } from '../../../../src/api/governor/core.js'

const WINDOW = 60_000

/** Starts `n` requests as fast as the core allows from `t0`; returns their times and the clock after. */
function spend(core: GovernorCore, n: number, t0: number): { times: number[]; now: number } {
  const times: number[] = []
  let now = t0
  for (let i = 0; i < n; i++) core.enqueue('sweep', now)
  while (times.length < n) {
    const { started, wakeAt } = core.poll(now)
    for (const _ of started) times.push(now)
    for (let k = 0; k < started.length; k++) core.finish()
    if (started.length === 0) now = wakeAt ?? now + 1
  }
  return { times, now }
}

describe('the governor after the clock stepped back', () => {
  test("an hour's step back does not hold the next start for an hour", () => {
    const core = new GovernorCore({ limitPerMinute: 60, marginMs: 250, burst: 2 })
    const { now } = spend(core, 10, 1_000_000_000)
    const back = now - 3_600_000
    core.enqueue('webhook', back)
    const at = core.readyAt(back)
    expect(at).toBeDefined()
    // Ten starts in the window, now counted at `back`: the next one is paced, not held an hour.
    expect(at! - back).toBeLessThanOrEqual((2 * (WINDOW + 250)) / 60)
  })

  test('whatever the step, starts made before it still count: never more than the limit in any window of the new clock, and no wait longer than a window', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 7_200_000 }),
        fc.integer({ min: 0, max: 200 }),
        (limit, burst, before, step, after) => {
          const core = new GovernorCore({ limitPerMinute: limit, marginMs: 250, burst })
          const first = spend(core, before, 1_000_000_000)
          const back = first.now - step
          // Starts made after `back` by the old clock count at `back` on the new one.
          const carried = first.times.map((t) => Math.min(t, back))
          core.enqueue('sweep', back)
          const wait = core.readyAt(back)! - back
          expect(wait).toBeLessThanOrEqual(WINDOW + 250)
          core.cancel(core.enqueue('sweep', back))
          const second = spend(core, after, back)
          // Every window that ends at a start made after the step (earlier windows were checked
          // by the old clock; moving starts to `back` only brings them closer on paper).
          const all = [...carried, ...second.times]
          for (const end of second.times) expect(all.filter((t) => t > end - WINDOW && t <= end).length).toBeLessThanOrEqual(limit)
        },
      ),
      { numRuns: 200 },
    )
  })
})
