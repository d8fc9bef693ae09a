// Property tests of the governor's core over long simulated runs: hours of fake
// time, random arrivals, priorities, service times, aborts, 429 pauses and header observations.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { PRIORITIES, maxInWindow, simulate, type Arrival } from '../../../support/governor-sim.js'

const WINDOW = 60_000

const arrival = fc.record({
  gapMs: fc.integer({ min: 0, max: 6_000 }),
  priority: fc.constantFrom(...PRIORITIES),
  serviceMs: fc.integer({ min: 1, max: 4_000 }),
  abortAfterMs: fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
})

const options = fc.record({
  limitPerMinute: fc.integer({ min: 1, max: 120 }),
  maxInFlight: fc.integer({ min: 1, max: 8 }),
  marginMs: fc.constantFrom(0, 250),
  burst: fc.integer({ min: 1, max: 10 }),
  agingMs: fc.constantFrom(10_000, 60_000),
})

describe('GovernorCore over long simulated runs', () => {
  test('never more starts than the limit in any sliding 60 s window, pauses and adaptation included', () => {
    fc.assert(
      fc.property(
        options,
        fc.array(arrival, { minLength: 200, maxLength: 2_500 }),
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 3 * 3_600_000 }), forMs: fc.integer({ min: 1, max: 90_000 }) }), {
          maxLength: 10,
        }),
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 3 * 3_600_000 }), remaining: fc.integer({ min: 0, max: 120 }) }), {
          maxLength: 20,
        }),
        (opts, arrivals, pauses, observations) => {
          const run = simulate(opts, arrivals, pauses, observations)
          const times = run.starts.map((s) => s.at)
          expect(maxInWindow(times, WINDOW)).toBeLessThanOrEqual(opts.limitPerMinute)
          // Every 429 pause honoured: no start inside [pause, until).
          for (const p of run.pauses) expect(times.filter((t) => t >= p.at && t < p.until)).toEqual([])
          // Nothing lost: every request either started or was aborted while queued.
          expect(run.starts.length + run.aborted.size).toBe(arrivals.length)
        },
      ),
      { numRuns: 40 },
    )
  })

  test('the order of starts follows priority, with aging the only exception', () => {
    fc.assert(
      fc.property(options, fc.array(arrival, { minLength: 200, maxLength: 2_000 }), (opts, arrivals) => {
        const run = simulate(opts, arrivals)
        expect(run.starts.flatMap((s) => s.violations)).toEqual([])
      }),
      { numRuns: 40 },
    )
  })

  test('without aging, no lower priority starts while a higher one waits', () => {
    fc.assert(
      fc.property(options, fc.array(arrival, { minLength: 100, maxLength: 1_500 }), (opts, arrivals) => {
        const run = simulate({ ...opts, agingMs: Number.POSITIVE_INFINITY }, arrivals, [], [], Number.POSITIVE_INFINITY)
        expect(run.starts.flatMap((s) => s.violations)).toEqual([])
      }),
      { numRuns: 30 },
    )
  })

  test('no starvation: reconcile requests start under a webhook overload that never ends', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 60 }),
        fc.array(fc.integer({ min: 0, max: 3_600_000 }), { minLength: 1, maxLength: 20 }),
        (limit, reconcileTimes) => {
          // Webhook fetches arrive at twice the budget for two hours; reconcile ones now and then.
          const spacing = WINDOW / limit / 2
          const events: { at: number; priority: Arrival['priority'] }[] = []
          for (let t = 0; t < 2 * 3_600_000; t += spacing) events.push({ at: t, priority: 'webhook' })
          for (const t of reconcileTimes) events.push({ at: t, priority: 'reconcile' })
          events.sort((a, b) => a.at - b.at)
          let prev = 0
          const arrivals: Arrival[] = events.map((e) => {
            const gapMs = e.at - prev
            prev = e.at
            return { gapMs, priority: e.priority, serviceMs: 100 }
          })
          const agingMs = 60_000
          const run = simulate({ limitPerMinute: limit, agingMs }, arrivals, [], [], agingMs, false)
          const reconcile = run.starts.filter((s) => s.ticket.priority === 'reconcile')
          expect(reconcile).toHaveLength(reconcileTimes.length)
          for (const s of reconcile) {
            // Once aged to the top level it is behind only what was queued before it.
            const queuedBefore = run.tickets.filter((t) => t.enqueuedAt <= s.ticket.enqueuedAt).length
            expect(s.at - s.ticket.enqueuedAt).toBeLessThanOrEqual(3 * agingMs + (queuedBefore + 2) * (WINDOW / limit + 1_000))
          }
        },
      ),
      { numRuns: 15 },
    )
  })

  test('uses the budget: a saturated queue gets the limit per window over an hour', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 8 }), (limit, burst) => {
        const arrivals: Arrival[] = Array.from({ length: limit * 60 }, () => ({ gapMs: 0, priority: 'sweep' as const, serviceMs: 10 }))
        const run = simulate({ limitPerMinute: limit, burst, maxInFlight: 64, marginMs: 250 }, arrivals, [], [], 60_000, false)
        const hours = (run.starts.at(-1)?.at ?? 0) / 3_600_000
        // limit*60 starts need about an hour, never much more (margin and burst shape it a little).
        expect(hours).toBeLessThanOrEqual(1.01)
        expect(
          maxInWindow(
            run.starts.map((s) => s.at),
            WINDOW,
          ),
        ).toBeLessThanOrEqual(limit)
      }),
      { numRuns: 20 },
    )
  })

  test('another client on the key lowers the effective limit and it recovers slowly', () => {
    // One request every 2 s for ten minutes (30 a minute of ours), then a backlog of 3,000.
    const arrivals: Arrival[] = [
      ...Array.from({ length: 300 }, () => ({ gapMs: 2_000, priority: 'sweep' as const, serviceMs: 10 })),
      ...Array.from({ length: 3_000 }, () => ({ gapMs: 0, priority: 'sweep' as const, serviceMs: 10 })),
    ]
    // At 10 minutes the headers show nothing left: the other 30 went to another client.
    const run = simulate({ limitPerMinute: 60, recoverEveryMs: 60_000, recoverStep: 6 }, arrivals, [], [{ at: 600_000, remaining: 0 }])
    expect(run.minEffective).toBeLessThan(60)
    const inMinute = (from: number): number => run.starts.filter((s) => s.at >= from && s.at < from + WINDOW).length
    expect(run.minEffective).toBeLessThanOrEqual(30)
    expect(inMinute(601_000)).toBeLessThanOrEqual(run.minEffective + 2)
    expect(inMinute(40 * 60_000)).toBeGreaterThanOrEqual(58)
  })
})
