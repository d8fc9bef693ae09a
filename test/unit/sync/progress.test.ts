import { describe, expect, test } from 'vitest'
import { etaSeconds, formatDuration } from '../../../src/sync/progress.js'

describe('backfill progress', () => {
  test.each([
    [{ rows: 0, total: 6000 }, 100, 60, 60],
    [{ rows: 3000, total: 6000 }, 100, 60, 30],
    [{ rows: 0, total: 20000 }, 100, 60, 200],
    [{ rows: 6000, total: 6000 }, 100, 60, 0],
  ])('ETA from the budget: %o, page %i, %i/min -> %i s', (p, page, budget, eta) => {
    expect(etaSeconds(p, page, budget)).toBe(eta)
  })

  test('no total, no ETA', () => {
    expect(etaSeconds({ rows: 5, total: undefined }, 100, 60)).toBeUndefined()
  })

  test.each([
    [5, '5s'],
    [65, '1m05s'],
    [3725, '1h02m'],
  ])('%i s reads %s', (s, text) => expect(formatDuration(s)).toBe(text))
})
