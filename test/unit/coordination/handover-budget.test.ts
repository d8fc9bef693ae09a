import { describe, expect, test } from 'vitest'
import { seedStarts } from '../../../src/coordination/handover-budget.js'

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
