import { expect, test } from 'vitest'
import { SlidingWindow } from '../../../../src/api/governor/sliding-window.js'

test('nextFreeAt is the limit-th most recent start plus the window', () => {
  const w = new SlidingWindow(3, 60_000)
  expect(w.nextFreeAt(3)).toBe(Number.NEGATIVE_INFINITY)
  for (const t of [0, 10, 20, 30]) w.record(t)
  expect(w.nextFreeAt(3)).toBe(60_010)
  expect(w.nextFreeAt(1)).toBe(60_030)
  expect(w.nextFreeAt(99)).toBe(60_010) // capped at the capacity (the configured limit)
  expect(w.countInWindow(60_015)).toBe(2)
  expect(w.countInWindow(30)).toBe(3)
})
