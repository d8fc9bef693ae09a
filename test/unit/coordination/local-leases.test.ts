import { describe, expect, test } from 'vitest'
import { LocalLeases } from '../../../src/coordination/local-leases.js'

describe('local lease validity, by the monotonic time the request was sent', () => {
  test('valid until sent + ttl - margin, whenever the answer arrived', () => {
    const l = new LocalLeases(15_000, 3_000)
    // Sent at 1,000; the answer took 4 s to arrive: validity still counts from the send.
    expect(l.acquired(1_000, [{ accountId: 'x', epoch: 3 }])).toEqual([{ accountId: 'x', epoch: 3 }])
    expect(l.validEpoch('x', 12_999)).toBe(3)
    expect(l.validEpoch('x', 13_000)).toBeUndefined()
    expect(l.expired(13_000)).toEqual(['x'])
    expect(l.nextExpiry()).toBe(13_000)
  })

  test('a renewal extends what it returns and reports the rest as lost', () => {
    const l = new LocalLeases(15_000, 3_000)
    l.acquired(0, [
      { accountId: 'x', epoch: 1 },
      { accountId: 'y', epoch: 1 },
      { accountId: 'z', epoch: 1 },
    ])
    // y is gone; z came back under another epoch (lost and retaken): both are lost here.
    expect(
      l.renewed(5_000, [
        { accountId: 'x', epoch: 1 },
        { accountId: 'z', epoch: 2 },
      ]),
    ).toEqual(['y', 'z'])
    expect(l.accounts()).toEqual(['x'])
    expect(l.validEpoch('x', 16_999)).toBe(1)
    expect(l.validEpoch('x', 17_000)).toBeUndefined()
  })

  test('a late answer to an older renewal never shortens validity', () => {
    const l = new LocalLeases(15_000, 3_000)
    l.acquired(10_000, [{ accountId: 'x', epoch: 1 }])
    l.renewed(5_000, [{ accountId: 'x', epoch: 1 }])
    expect(l.validEpoch('x', 21_999)).toBe(1)
  })

  test('a retaken account at the same epoch is not new; at another epoch it is', () => {
    const l = new LocalLeases(15_000, 3_000)
    l.acquired(0, [{ accountId: 'x', epoch: 1 }])
    expect(l.acquired(1_000, [{ accountId: 'x', epoch: 1 }])).toEqual([])
    expect(l.acquired(2_000, [{ accountId: 'x', epoch: 2 }])).toEqual([{ accountId: 'x', epoch: 2 }])
    l.drop(['x'])
    expect(l.validEpoch('x', 2_000)).toBeUndefined()
    expect(l.nextExpiry()).toBeUndefined()
  })

  test.each([0, 15_000, -1])('refuses a margin of %i against a ttl of 15 s', (margin) => {
    expect(() => new LocalLeases(15_000, margin)).toThrow(RangeError)
  })
})
