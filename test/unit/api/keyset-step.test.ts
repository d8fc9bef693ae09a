// The step planner of the keyset walk (src/api/keyset/next-step.ts): every step after page 1
// overlaps the rows already read by at least one row (the anchor), and no step reads fewer new rows
// than another valid choice would.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { nextStep } from '../../../src/api/keyset/next-step.js'

describe('nextStep', () => {
  test('page 1 while it reads the most; then a page overlapping the rows read by one', () => {
    expect(nextStep(0, 100)).toEqual({ page: 1, limit: 100, offset: 0 })
    expect(nextStep(1, 100)).toEqual({ page: 1, limit: 100, offset: 0 })
    expect(nextStep(100, 100)).toEqual({ page: 2, limit: 99, offset: 99 })
    // 198 read (100, then 99 from offset 99): limit 98 on page 3 starts at 196.
    expect(nextStep(198, 100)).toEqual({ page: 3, limit: 98, offset: 196 })
  })

  test('property: the offset is (page - 1) * limit, inside the rows read, and no other step reads more new rows', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 100 }), (read, max) => {
        const step = nextStep(read, max)
        expect(step.offset).toBe((step.page - 1) * step.limit)
        expect(step.limit).toBeGreaterThanOrEqual(1)
        expect(step.limit).toBeLessThanOrEqual(max)
        if (step.page > 1) expect(step.offset).toBeLessThanOrEqual(read - 1)
        const fresh = step.limit - (read - step.offset)
        let best = max - read
        for (let limit = 1; limit <= max; limit++)
          for (let q = 1; q * limit <= read - 1; q++) best = Math.max(best, limit - (read - q * limit))
        expect(fresh).toBe(best)
      }),
      { numRuns: 300 },
    )
  })
})
