// Which idle mirrors the daemon parks (src/daemon/mirror-parking.ts), the turns first sweeps take
// (mirror-parker.ts), and the open-mirror budget derived from `ulimit -n` (descriptor-budget.ts).
import { expect, test } from 'vitest'
import {
  DESCRIPTORS_BASE,
  MAX_OPEN_MIRRORS,
  MIN_OPEN_MIRRORS,
  openMirrorBudget,
  openMirrorCap,
  UPSTREAM_SOCKETS,
} from '../../../src/daemon/descriptor-budget.js'
import { turns } from '../../../src/daemon/mirror-parker.js'
import { mirrorsToPark, QuietTracker, type MirrorState } from '../../../src/daemon/mirror-parking.js'

const m = (id: string, quietSince: number, over: Partial<MirrorState> = {}): MirrorState => ({
  id,
  open: true,
  busy: false,
  quietSince,
  ...over,
})

test('a mirror quiet for the idle time is parked; a busy one, a parked one or a recently used one is not', () => {
  const policy = { idleMs: 10_000, maxOpen: 100 }
  const mirrors = [m('old', 0), m('recent', 95_000), m('busy', 0, { busy: true }), m('parked', 0, { open: false }), m('edge', 90_000)]
  expect(mirrorsToPark(mirrors, 100_000, policy)).toEqual(['old', 'edge'])
})

test('over the budget, quiet mirrors are parked sooner, longest quiet first, until the open ones fit', () => {
  const mirrors = [m('a', 99_000), m('b', 97_000), m('c', 98_000), m('d', 0, { busy: true }), m('e', 0, { open: false })]
  expect(mirrorsToPark(mirrors, 100_000, { idleMs: 10_000, maxOpen: 2 })).toEqual(['b', 'c'])
  // Busy ones are never parked, even when the budget cannot then be met.
  expect(mirrorsToPark(mirrors, 100_000, { idleMs: 10_000, maxOpen: 0 })).toEqual(['b', 'c', 'a'])
  expect(mirrorsToPark(mirrors, 100_000, { idleMs: Infinity, maxOpen: Infinity })).toEqual([])
})

test('the quiet time restarts at every use and every busy look', () => {
  const t = new QuietTracker()
  expect(t.look('a', { open: true, busy: false, uses: 5 }, 1_000).quietSince).toBe(1_000)
  expect(t.look('a', { open: true, busy: false, uses: 5 }, 3_000).quietSince).toBe(1_000)
  expect(t.look('a', { open: true, busy: false, uses: 6 }, 5_000).quietSince).toBe(5_000)
  expect(t.look('a', { open: true, busy: true, uses: 6 }, 7_000).quietSince).toBe(7_000)
  expect(t.look('a', { open: true, busy: false, uses: 6 }, 9_000).quietSince).toBe(7_000)
  t.keep(new Set())
  expect(t.look('a', { open: true, busy: false, uses: 6 }, 11_000).quietSince).toBe(11_000)
})

test('first sweeps take turns: at most n at once, the others start in order as one ends', async () => {
  const gate = turns(2)
  let running = 0
  let most = 0
  const order: number[] = []
  const ends: (() => void)[] = []
  const works = [0, 1, 2, 3, 4].map((i) =>
    gate.run(async () => {
      order.push(i)
      most = Math.max(most, ++running)
      await new Promise<void>((resolve) => ends.push(resolve))
      running--
    }),
  )
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r))
    ends.shift()?.()
  }
  await Promise.all(works)
  expect(most).toBe(2)
  expect(order).toEqual([0, 1, 2, 3, 4])
})

test('the open-mirror budget sets aside the process and the shared upstream sockets, whatever the accounts, and keeps a floor', () => {
  expect(openMirrorBudget(100, 1024)).toBe(Math.floor((1024 - DESCRIPTORS_BASE - UPSTREAM_SOCKETS) / 5))
  // Parked accounts hold nothing: a thousand get the room a hundred get.
  expect(openMirrorBudget(1000, 1024)).toBe(openMirrorBudget(100, 1024))
  expect(openMirrorBudget(1000, 200)).toBe(MIN_OPEN_MIRRORS)
  expect(openMirrorBudget(1000, Infinity)).toBe(Infinity)
  // The hard cap: the descriptor budget, and at most the memory budget.
  expect(openMirrorCap(100, 500)).toBe(openMirrorBudget(100, 500))
  expect(openMirrorCap(100, 1024)).toBe(MAX_OPEN_MIRRORS)
  expect(openMirrorCap(100, Infinity)).toBe(MAX_OPEN_MIRRORS)
  // 1,000 accounts under `ulimit -n 1024`: the memory budget, not the 16 of the floor.
  expect(openMirrorCap(1000, 1024)).toBe(MAX_OPEN_MIRRORS)
  expect(DESCRIPTORS_BASE + UPSTREAM_SOCKETS + 5 * openMirrorCap(1000, 1024)).toBeLessThan(1024)
})
