// The webhook processor's pacing rules (src/webhooks/pacing.ts) with plain numbers: when it rests
// between slices and how long, how the rest adapts to the intake's use of the loop, and the waits.
import { describe, expect, test } from 'vitest'
import {
  BUSY_MAX_RUN,
  BUSY_SLICE_MS,
  MAX_REST_FACTOR,
  MAX_REST_MS,
  MAX_RUN,
  MIN_REST_FACTOR,
  maxRun,
  nextPace,
  nextRestFactor,
  retryDelay,
  sliceBudget,
  wakeDelay,
} from '../../../src/webhooks/pacing.js'

describe('nextPace', () => {
  const arriving = { commits: 8, commitsSeen: 5, filling: false, spentMs: 0.5, restFactor: 1 }

  test('no group committed since the last slice: the next slice follows at the next turn', () => {
    expect(nextPace({ ...arriving, commitsSeen: 8 })).toEqual({ busy: false })
  })

  test('deliveries arriving: rest as long as the slice took, times the factor', () => {
    expect(nextPace(arriving)).toEqual({ busy: true, restMs: 1 })
    expect(nextPace({ ...arriving, spentMs: 3, restFactor: 4 })).toEqual({ busy: true, restMs: 12 })
  })

  test('the rest is at least 1 ms and at most MAX_REST_MS, however long the slice took', () => {
    expect(nextPace({ ...arriving, spentMs: 0.01, restFactor: 0.5 })).toEqual({ busy: true, restMs: 1 })
    expect(nextPace({ ...arriving, spentMs: 50, restFactor: 16 })).toEqual({ busy: true, restMs: MAX_REST_MS })
  })

  test('the backlog past half its bound: applying comes first, no rest even while deliveries arrive', () => {
    expect(nextPace({ ...arriving, filling: true })).toEqual({ busy: false })
  })
})

describe('nextRestFactor', () => {
  test('a loop more than half busy during the rest doubles the factor, up to MAX_REST_FACTOR', () => {
    expect(nextRestFactor(1, 0.51)).toBe(2)
    expect(nextRestFactor(MAX_REST_FACTOR, 0.9)).toBe(MAX_REST_FACTOR)
  })

  test('a loop half busy or less halves it, down to MIN_REST_FACTOR', () => {
    expect(nextRestFactor(4, 0.5)).toBe(2)
    expect(nextRestFactor(MIN_REST_FACTOR, 0)).toBe(MIN_REST_FACTOR)
  })
})

describe('slices and waits', () => {
  test('a busy slice is at most BUSY_SLICE_MS and applies shorter runs', () => {
    expect(sliceBudget(false)).toBe(2)
    expect(sliceBudget(false, 7)).toBe(7)
    expect(sliceBudget(true)).toBe(BUSY_SLICE_MS)
    expect(sliceBudget(true, 0)).toBe(0)
    expect([maxRun(false), maxRun(true)]).toEqual([MAX_RUN, BUSY_MAX_RUN])
  })

  test('a wake gathers group commits unless the backlog nears its bound', () => {
    expect(wakeDelay(false)).toBe(5)
    expect(wakeDelay(false, 0)).toBe(0)
    expect(wakeDelay(true, 5)).toBe(0)
  })

  test('the back-off after mirror failures doubles from the first wait up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => retryDelay(n))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000])
    expect([1, 2, 3, 4, 5].map((n) => retryDelay(n, 20, 320))).toEqual([20, 40, 80, 160, 320])
  })
})
