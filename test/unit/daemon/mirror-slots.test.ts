// The hard cap on open mirrors (src/daemon/mirror-slots.ts): works wait in order for a slot, the
// least recently used idle mirror parks at once to make room, a busy or held one never does, an
// account's nested works share its slot, and works holding every slot while they wait on
// something else (the upstream) end and let the others in: no deadlock.
import { expect, test } from 'vitest'
import { MirrorSlots, SlotWork, type SlotMirror } from '../../../src/daemon/mirror-slots.js'
import { FakeClock } from '../../support/fake-clock.js'

/** A mirror that opens on use and parks when asked (unless busy). */
class FakeMirror implements SlotMirror {
  open = false
  busy = false
  parks = 0
  park(): Promise<boolean> {
    if (this.busy || !this.open) return Promise.resolve(false)
    this.open = false
    this.parks++
    return Promise.resolve(true)
  }
}

const flush = () => new Promise((r) => setImmediate(r))

function slotsOf(n: number, cap: number) {
  const clock = new FakeClock()
  const slots = new MirrorSlots(() => cap, clock)
  const mirrors = Array.from({ length: n }, (_, i) => {
    const m = new FakeMirror()
    slots.add(`a${i}`, m)
    return m
  })
  /** A work that opens its mirror, notes itself, and ends when `release` resolves. */
  const work = (i: number, log: string[], release: Promise<void> = Promise.resolve()) =>
    slots.hold(`a${i}`, async () => {
      mirrors[i]!.open = true
      log.push(`a${i}`)
      log.push(`taken ${slots.taken}`)
      await release
    })
  return { slots, mirrors, work, clock }
}

test('every slot held by a work waiting on something else: the others wait in order, then all run, never over the cap', async () => {
  const { slots, mirrors, work } = slotsOf(12, 4)
  const log: string[] = []
  let upstream!: () => void
  const answered = new Promise<void>((r) => (upstream = r))
  const all = Array.from({ length: 12 }, (_, i) => work(i, log, i < 4 ? answered : undefined))
  await flush()
  expect(log.filter((l) => l.startsWith('a'))).toEqual(['a0', 'a1', 'a2', 'a3'])
  expect(slots.waiting).toBe(8)
  upstream()
  await Promise.all(all)
  // First come, first served; the idle ones parked to make room.
  expect(log.filter((l) => l.startsWith('a'))).toEqual(Array.from({ length: 12 }, (_, i) => `a${i}`))
  expect(log.filter((l) => l.startsWith('taken')).every((l) => Number(l.slice(6)) <= 4)).toBe(true)
  expect(slots.highWater).toBe(4)
  expect(mirrors.filter((m) => m.open)).toHaveLength(4)
  expect(slots.evicted).toBe(8)
})

test('room is made by parking the least recently used idle mirror; a busy one or one held is never parked', async () => {
  const { slots, mirrors, work, clock } = slotsOf(4, 2)
  await work(0, [])
  await work(1, [])
  // a0 used first: parked for a2.
  await work(2, [])
  expect(mirrors.map((m) => m.open)).toEqual([false, true, true, false])
  // a1 busy outside any hold (a delivery): a2 is parked for a3 instead.
  mirrors[1]!.busy = true
  await work(3, [])
  expect(mirrors.map((m) => m.open)).toEqual([false, true, false, true])
  // Held: a3's work waits on the upstream while a0 comes; a1 still busy, so a0 waits its turn.
  let release!: () => void
  const held = work(3, [], new Promise<void>((r) => (release = r)))
  const log: string[] = []
  const waiting = work(0, log)
  await flush()
  expect(log).toEqual([])
  expect(mirrors[3]!.open).toBe(true)
  // Another work of a3 shares its slot at once.
  await slots.hold('a3', () => Promise.resolve())
  // The delivery ends: at the next try a1 is parked, and a0 runs.
  mirrors[1]!.busy = false
  await clock.advance(1_000)
  await flush()
  expect(log[0]).toBe('a0')
  expect(mirrors.map((m) => m.open)).toEqual([true, false, false, true])
  release()
  await Promise.all([held, waiting])
  expect(slots.highWater).toBe(2)
})

test('a work inside a work of the same account shares its slot and never waits, even with others in line', async () => {
  const { slots, work } = slotsOf(3, 1)
  const log: string[] = []
  let inner = false
  const outer = slots.hold('a0', async () => {
    await flush()
    // a1 is in line now; a0's nested work does not queue behind it.
    expect(slots.waiting).toBe(1)
    await slots.hold('a0', () => Promise.resolve((inner = true)))
  })
  const other = work(1, log)
  await Promise.all([outer, other])
  expect(inner).toBe(true)
  expect(log).toEqual(['a1', 'taken 1'])
})

test('a mirror opened outside any hold (a delivery) makes room at once: idle ones park', async () => {
  const { slots, mirrors, work } = slotsOf(3, 2)
  await work(0, [])
  await work(1, [])
  mirrors[2]!.open = true
  slots.slot('a2').opened()
  await flush()
  expect(mirrors.map((m) => m.open)).toEqual([false, true, true])
  // Once the process stops, nothing waits for a slot.
  slots.unbound()
  await Promise.all([work(0, []), work(1, []), work(2, [])])
})

test('granting a thousand accounts in line at once reads each mirror a bounded number of times, not once per grant', async () => {
  const clock = new FakeClock()
  const slots = new MirrorSlots(() => 100, clock)
  let reads = 0
  const mirrors = Array.from({ length: 1000 }, (_, i) => {
    const m = new FakeMirror()
    // Busy (a delivery being applied, say): none parks, so the line waits until the cap goes.
    m.busy = true
    slots.add(`a${i}`, {
      get open() {
        reads++
        return m.open
      },
      get busy() {
        return m.busy
      },
      park: () => m.park(),
    })
    return m
  })
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  const works = mirrors.map((m, i) =>
    slots.hold(`a${i}`, async () => {
      m.open = true
      await held
    }),
  )
  await flush()
  expect(slots.waiting).toBe(900)
  reads = 0
  // The process stops: no cap, every work in line is granted in one pass.
  slots.unbound()
  expect(slots.waiting).toBe(0)
  // A pass over the members and one over the line (about 2,000 reads); a pass over the members
  // for each grant before (about 900,000).
  expect(reads).toBeLessThan(5_000)
  release()
  await Promise.all(works)
})

test('sweeps waiting for their pace give their slot back: six accounts sweep at once under a cap of two, never more than two open', async () => {
  const clock = new FakeClock()
  const slots = new MirrorSlots(() => 2, clock)
  const PAGES = 4
  const PACE_MS = 1_000
  let inSweep = 0
  let mostInSweep = 0
  let mostOpen = 0
  const accounts = Array.from({ length: 6 }, (_, i) => {
    const work = new SlotWork(slots.slot(`a${i}`))
    // At work on the mirror (not aside): never parked; aside, it may be.
    const mirror = Object.assign(new FakeMirror(), { pages: 0 })
    Object.defineProperty(mirror, 'busy', { get: () => work.atWork > 0 })
    slots.add(`a${i}`, mirror)
    return { work, mirror }
  })
  const use = (m: FakeMirror) => {
    expect(accounts.some((a) => a.mirror === m && a.work.atWork > 0)).toBe(true)
    m.open = true
    mostOpen = Math.max(mostOpen, accounts.filter((a) => a.mirror.open).length)
  }
  // A sweep: reads its cursor, then each page waits for its pace aside and commits in the slot.
  const sweep = ({ work, mirror }: (typeof accounts)[number]) =>
    work.hold(async () => {
      mostInSweep = Math.max(mostInSweep, ++inSweep)
      use(mirror)
      for (let p = 0; p < PAGES; p++) {
        await work.aside(() => clock.sleep(PACE_MS))
        use(mirror)
        mirror.pages++
      }
      inSweep--
    })
  const all = Promise.all(accounts.map(sweep))
  for (let t = 0; t < 20 && accounts.some((a) => a.mirror.pages < PAGES); t++) await clock.advance(PACE_MS)
  await all
  // Every account swept at once (its pace waited beside the others'), within about its own time.
  expect(mostInSweep).toBe(6)
  expect(clock.now() - new FakeClock().now()).toBeLessThanOrEqual((PAGES + 1) * PACE_MS)
  expect(accounts.map((a) => a.mirror.pages)).toEqual(accounts.map(() => PAGES))
  // Never more than the cap open or taken; mirrors aside were parked to make room.
  expect(mostOpen).toBeLessThanOrEqual(2)
  expect(slots.highWater).toBe(2)
  expect(slots.evicted).toBeGreaterThan(0)
  // Aside outside any hold only waits.
  expect(await slots.aside('a0', () => Promise.resolve('ran'))).toBe('ran')
  expect(slots.taken).toBeLessThanOrEqual(2)
})
