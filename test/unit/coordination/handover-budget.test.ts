import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { seedStarts } from '../../../src/coordination/handover-budget.js'
import { maxInWindow, simulate, type Arrival } from '../../support/governor-sim.js'

const NOW = 1_000_000

describe("the old owner's last minute, seeded into the new owner's window", () => {
  test('nothing recorded: nothing to count', () => {
    expect(seedStarts(NOW, undefined, { limitPerMinute: 60 })).toEqual([])
  })

  test('a graceful handover counts exactly the recorded starts, at their ages on the new clock', () => {
    const seeded = seedStarts(NOW, { epoch: 1, agesMs: [50_000, 20_000, 1_000], sinceRecordMs: 3_000, final: true }, { limitPerMinute: 60 })
    expect(seeded).toEqual([NOW - 50_000, NOW - 20_000, NOW - 1_000])
  })

  test('after a crash the unrecorded tail counts as the most starts the old pacing allowed there, made now', () => {
    // 10 s since the last record at 60/min: 10 paced starts and a burst of 2.
    const seeded = seedStarts(NOW, { epoch: 1, agesMs: [30_000, 12_000], sinceRecordMs: 10_000, final: false }, { limitPerMinute: 60 })
    expect(seeded).toEqual([NOW - 30_000, NOW - 12_000, ...Array<number>(12).fill(NOW)])
  })

  test('never more than the limit in all, and starts older than the window are left out', () => {
    const ages = Array.from({ length: 58 }, (_, i) => 1_000 + i * 1_000)
    const seeded = seedStarts(NOW, { epoch: 1, agesMs: [...ages, 61_000], sinceRecordMs: 20_000, final: false }, { limitPerMinute: 60 })
    expect(seeded).toHaveLength(60)
    expect(seeded.filter((t) => t === NOW)).toHaveLength(2)
    expect(Math.min(...seeded)).toBe(NOW - 58_000)
  })
})

/** A request every 100 ms for `ms`: more than the budget, so the governor starts as many as it may. */
const flood = (ms: number): Arrival[] => Array.from({ length: ms / 100 }, () => ({ gapMs: 100, priority: 'sweep' as const, serviceMs: 50 }))

describe("seedStarts as the new governor's priorStarts", () => {
  test("the old owner's starts and the new owner's first minute never exceed 60 in any 60 s window", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 120_000 }), // how long the old owner ran
        fc.integer({ min: 0, max: 20_000 }), // its last record of starts, this long before it stopped
        fc.integer({ min: 0, max: 30_000 }), // from its stop (a crash) to the new owner's takeover
        fc.boolean(), // a graceful release: the record was written after its last start
        (ranMs, recordBeforeStopMs, gapMs, graceful) => {
          const old = simulate({ limitPerMinute: 60 }, flood(ranMs)).starts.map((s) => s.at)
          const stopAt = Math.max(...old, 0)
          const recordAt = graceful ? stopAt : Math.max(0, stopAt - recordBeforeStopMs)
          const takeover = stopAt + gapMs
          // What readPriorStarts returns at the takeover: recorded starts of the window, as ages.
          const recorded = old.filter((t) => t <= recordAt && t > takeover - 60_000)
          const prior = { epoch: 1, agesMs: recorded.map((t) => takeover - t), sinceRecordMs: takeover - recordAt, final: graceful }
          // The new owner's clock starts at 0 at the takeover: the seed is placed on it.
          const seeded = seedStarts(0, prior, { limitPerMinute: 60 })
          const fresh = simulate({ limitPerMinute: 60, priorStarts: seeded, priorStartsBefore: 0 }, flood(90_000)).starts.map(
            (s) => s.at + takeover,
          )
          expect(fresh.length).toBeGreaterThan(0)
          expect(maxInWindow([...old, ...fresh], 60_000)).toBeLessThanOrEqual(60)
        },
      ),
      { numRuns: 60 },
    )
  })

  test('without the seed the same handover overspends the first minute (the check above can fail)', () => {
    const old = simulate({ limitPerMinute: 60 }, flood(60_000)).starts.map((s) => s.at)
    const takeover = Math.max(...old)
    const fresh = simulate({ limitPerMinute: 60 }, flood(60_000)).starts.map((s) => s.at + takeover)
    expect(maxInWindow([...old, ...fresh], 60_000)).toBeGreaterThan(60)
  })
})
