// Property test of the protocol between several processes' governor cores and the window they
// share (the mirror's request_starts): each core asks readyAt, claims the start in the shared
// window (below the limit: granted; otherwise it defers until the start in the way leaves), and
// only then starts one. Together they never pass the limit in any sliding 60 s window.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { GovernorCore, PRIORITIES } from '../../../../src/api/governor/core.js'
import { maxInWindow } from '../../../support/governor-sim.js'

const WINDOW = 60_000

interface Arrival {
  at: number
  process: number
  priority: (typeof PRIORITIES)[number]
  serviceMs: number
}

function simulateShared(limit: number, processes: number, arrivals: Arrival[], marginMs: number) {
  const cores = Array.from({ length: processes }, () => new GovernorCore({ limitPerMinute: limit, marginMs, maxInFlight: 4 }))
  const serviceOf = cores.map(() => new Map<number, number>())
  const shared: number[] = []
  const starts: { at: number; process: number }[] = []
  const finishes: { at: number; process: number }[] = []
  const sorted = [...arrivals].sort((a, b) => a.at - b.at)
  let ai = 0
  let now = 0
  for (let guard = 0; guard < 1_000_000; guard++) {
    for (let i = finishes.length - 1; i >= 0; i--) {
      if (finishes[i]!.at <= now) {
        cores[finishes[i]!.process]!.finish()
        finishes.splice(i, 1)
      }
    }
    while (ai < sorted.length && sorted[ai]!.at <= now) {
      const a = sorted[ai++]!
      serviceOf[a.process]!.set(cores[a.process]!.enqueue(a.priority, now).id, a.serviceMs)
    }
    const wakes: number[] = []
    // Processes take turns in a different order each step: the shared window must hold regardless.
    const order = cores.map((_, i) => (i + guard) % cores.length)
    for (const p of order) {
      const core = cores[p]!
      for (;;) {
        const at = core.readyAt(now)
        if (at === undefined) break
        if (at > now) {
          wakes.push(at)
          break
        }
        const w = core.guardedWindowMs
        const inWindow = shared.filter((t) => t > now - w && t <= now).sort((a, b) => b - a)
        const blocking = inWindow[core.effectiveLimit - 1]
        if (blocking !== undefined) {
          core.defer(Math.max(blocking + w, now + 1))
          continue
        }
        shared.push(now)
        const { started } = core.poll(now, 1)
        expect(started).toHaveLength(1)
        starts.push({ at: now, process: p })
        finishes.push({ at: now + (serviceOf[p]!.get(started[0]!.id) ?? 1), process: p })
      }
    }
    const next = Math.min(sorted[ai]?.at ?? Infinity, ...finishes.map((f) => f.at), ...wakes)
    if (next === Infinity) break
    now = Math.max(now + (next <= now ? 1 : 0), next)
  }
  return { starts, shared }
}

describe('governor cores sharing one window', () => {
  test('several processes on one key never start more than the limit in any sliding 60 s window, and every request starts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 2, max: 4 }),
        fc.constantFrom(0, 250),
        fc.array(
          fc.record({
            at: fc.integer({ min: 0, max: 600_000 }),
            process: fc.integer({ min: 0, max: 3 }),
            priority: fc.constantFrom(...PRIORITIES),
            serviceMs: fc.integer({ min: 1, max: 3_000 }),
          }),
          { minLength: 20, maxLength: 300 },
        ),
        (limit, processes, marginMs, raw) => {
          const arrivals = raw.map((a) => ({ ...a, process: a.process % processes }))
          const run = simulateShared(limit, processes, arrivals, marginMs)
          expect(
            maxInWindow(
              run.starts.map((s) => s.at),
              WINDOW,
            ),
          ).toBeLessThanOrEqual(limit)
          expect(run.starts).toHaveLength(arrivals.length)
        },
      ),
      { numRuns: 40 },
    )
  })
})
