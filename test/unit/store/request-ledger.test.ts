import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { RequestLedger } from '../../../src/store/repositories/request-ledger.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

describe('RequestLedger', () => {
  test('recent() gives the starts of the last window, oldest first; old rows are pruned as it grows', () => {
    const ledger = new RequestLedger(m.sqlite, 60_000)
    const t0 = 1_000_000_000
    for (let i = 0; i < 200; i++) ledger.record(t0 + i * 1_000)
    const now = t0 + 199_000
    const recent = ledger.recent(now)
    expect(recent).toHaveLength(60)
    expect(recent[0]).toBe(now - 59_000)
    expect(recent.at(-1)).toBe(now)
    const stored = m.sqlite.prepare('SELECT count(*) FROM request_starts').pluck().get() as number
    expect(stored).toBeLessThan(60 + 64 + 1)
  })

  test("a second ledger on the same mirror (the next process) sees the first one's starts", () => {
    new RequestLedger(m.sqlite).record(5_000)
    expect(new RequestLedger(m.sqlite).recent(30_000)).toEqual([5_000])
    expect(new RequestLedger(m.sqlite).recent(65_000)).toEqual([])
  })
  // A wall clock stepped back between two processes leaves starts "in the future": held at their
  // own time they would block every request until the clock caught up; left out, they would let
  // the next process spend a whole window on top of them.
  test('a start later than now (the clock stepped back) counts as made now', () => {
    const ledger = new RequestLedger(m.sqlite)
    ledger.record(100_000)
    ledger.record(700_000)
    expect(ledger.recent(110_000)).toEqual([100_000, 110_000])
  })
  test('a second process after the wall clock stepped back is not granted more than the limit in the window', () => {
    let now = 1_000_000_000
    const first = new RequestLedger(m.sqlite, 60_000, () => now)
    // The first process spends the budget over 30 s, then the clock steps back 40 s.
    let granted = 0
    for (let i = 0; i < 60; i++, now += 500) if (first.claim(60, 60_000).granted) granted++
    expect(granted).toBe(60)
    now -= 40_000
    const second = new RequestLedger(m.sqlite, 60_000, () => now)
    let more = 0
    let refusal: { granted: boolean; retryAt?: number } = { granted: true }
    for (let i = 0; i < 60 && refusal.granted; i++) {
      refusal = second.claim(60, 60_000)
      if (refusal.granted) more++
    }
    expect(more).toBe(0)
    // The oldest start in the way counts as made now: free one window from now, not later.
    expect(refusal).toEqual({ granted: false, retryAt: now + 60_000 })
    expect(second.recent(now)).toHaveLength(60)
  })
  test('reading at start prunes what has left the window (short runs never reach the prune interval)', () => {
    const ledger = new RequestLedger(m.sqlite)
    for (const at of [1_000, 2_000, 3_000]) ledger.record(at)
    expect(new RequestLedger(m.sqlite).recent(62_500)).toEqual([3_000])
    // A second past the window is kept (a governor claims over the window plus its margin).
    expect(m.sqlite.prepare('SELECT at_ms FROM request_starts').pluck().all()).toEqual([2_000, 3_000])
    expect(new RequestLedger(m.sqlite).recent(63_500)).toEqual([])
    expect(m.sqlite.prepare('SELECT at_ms FROM request_starts').pluck().all()).toEqual([3_000])
  })

  test('claim() grants while the window shared by every process on the mirror has room, then names when the start in the way leaves', () => {
    let now = 1_000_000
    const clock = () => now
    const a = new RequestLedger(m.sqlite, 60_000, clock)
    const b = new RequestLedger(m.sqlite, 60_000, clock)
    expect(a.claim(3, 60_250)).toEqual({ granted: true })
    now += 5_000
    expect(b.claim(3, 60_250)).toEqual({ granted: true })
    now += 5_000
    expect(a.claim(3, 60_250)).toEqual({ granted: true })
    now += 1_000
    // Full: the oldest of the three (at 1,000,000) leaves at 1,060,250.
    expect(b.claim(3, 60_250)).toEqual({ granted: false, retryAt: 1_060_250 })
    now = 1_060_250
    expect(b.claim(3, 60_250)).toEqual({ granted: true })
    expect(a.recent(now)).toEqual([1_005_000, 1_010_000, 1_060_250])
  })
})
