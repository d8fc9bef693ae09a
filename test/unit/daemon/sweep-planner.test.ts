// The continuous sweeps' planner is a pure function: the stream that next removes the most
// staleness per request, except that a stream about to pass the bound goes first; a stream whose
// sweeps find nothing rests longer each time, until a change is seen on the account.
import { describe, expect, test } from 'vitest'
import {
  ChangeRate,
  FIRST_REST_MS,
  planNext,
  restAfterActivity,
  restAfterSweep,
  retryDelayMs,
  type PlannedStream,
} from '../../../src/daemon/sweep-planner.js'

const NOW = 1_000_000
const stream = (name: string, ageSeconds: number | undefined, changeRate = 0, cost = 1, retryAt?: number): PlannedStream => ({
  name,
  lastStartedAt: ageSeconds === undefined ? undefined : NOW - ageSeconds * 1000,
  changeRate,
  cost,
  retryAt,
})
const plan = (streams: PlannedStream[], maxIntervalMs = 60_000, requestMs = 1_200) =>
  planNext({ now: NOW, streams, maxIntervalMs, requestMs })

describe('planNext', () => {
  test('a stream never swept goes first, in the order given', () => {
    expect(plan([stream('clients', 5, 1), stream('jobs', undefined), stream('visits', undefined)])).toEqual({
      kind: 'sweep',
      stream: 'jobs',
      reason: 'first',
    })
  })

  test('a busier stream is swept before a quieter one of the same age', () => {
    expect(plan([stream('clients', 10, 0.01), stream('jobs', 10, 0.5), stream('invoices', 10, 0.05)])).toMatchObject({ stream: 'jobs' })
  })

  test('the square-root rule: four times the rate is worth twice the age, no more', () => {
    // rate x age^2: 0.4 x 10^2 = 40 < 0.1 x 21^2 = 44.1
    expect(plan([stream('jobs', 10, 0.4), stream('clients', 21, 0.1)])).toMatchObject({ stream: 'clients', reason: 'stalest' })
    expect(plan([stream('jobs', 10, 0.4), stream('clients', 19, 0.1)])).toMatchObject({ stream: 'jobs', reason: 'stalest' })
  })

  test('a costlier sweep is worth less per request', () => {
    expect(plan([stream('jobs', 10, 0.1, 3), stream('visits', 10, 0.1, 1)])).toMatchObject({ stream: 'visits' })
  })

  test('a quiet stream about to pass the bound goes before any busy one', () => {
    // One round of the other two and its own sweep take 3 x 1.2 s; 58 s + 3.6 s passes 60 s.
    const streams = [stream('jobs', 1, 5), stream('visits', 1, 5), stream('invoices', 58, 0)]
    expect(plan(streams)).toEqual({ kind: 'sweep', stream: 'invoices', reason: 'due' })
    // With more time left it waits its turn.
    expect(plan([stream('jobs', 1, 5), stream('visits', 1, 5), stream('invoices', 50, 0)])).toMatchObject({ stream: 'jobs' })
  })

  test('several due: the one that waited longest first', () => {
    expect(plan([stream('a', 59), stream('b', 61), stream('c', 70, 10)], 60_000)).toMatchObject({ stream: 'c', reason: 'due' })
    expect(plan([stream('a', 59), stream('b', 75), stream('c', 70, 10)], 60_000)).toMatchObject({ stream: 'b', reason: 'due' })
  })

  test('a budget too small for the bound degrades to oldest first (round robin)', () => {
    // Each request takes 30 s: every stream is always due.
    const streams = [stream('a', 40, 1), stream('b', 90, 0), stream('c', 60, 0)]
    expect(plan(streams, 60_000, 30_000)).toMatchObject({ stream: 'b', reason: 'due' })
  })

  test('a stream backing off is skipped; all backing off: wait for the first to be ready', () => {
    expect(plan([stream('jobs', 100, 1, 1, NOW + 5_000), stream('clients', 1, 0)])).toMatchObject({ stream: 'clients' })
    expect(plan([stream('jobs', 100, 1, 1, NOW + 5_000), stream('clients', 1, 0, 1, NOW + 2_000)])).toEqual({
      kind: 'wait',
      until: NOW + 2_000,
    })
    expect(plan([stream('jobs', 100, 1, 1, NOW)])).toMatchObject({ kind: 'sweep', stream: 'jobs' })
  })

  test('nothing to plan: idle', () => {
    expect(plan([])).toEqual({ kind: 'idle' })
  })

  test('over many steps, every stream is swept within the bound and the busy ones more often', () => {
    // Simulated: each sweep takes one request of 1.2 s; rates as in the staleness bench.
    const rates: Record<string, number> = { clients: 0.05, jobs: 0.4, visits: 0.4, invoices: 0.05, 'objects:a': 0.05, 'objects:b': 0.05 }
    const last = new Map<string, number>()
    const gaps = new Map<string, number[]>()
    let now = 0
    for (let i = 0; i < 3000; i++) {
      const p = planNext({
        now,
        streams: Object.entries(rates).map(([name, changeRate]) => ({ name, lastStartedAt: last.get(name), changeRate, cost: 1 })),
        maxIntervalMs: 60_000,
        requestMs: 1_200,
      })
      if (p.kind !== 'sweep') throw new Error('expected a sweep')
      const before = last.get(p.stream)
      if (before !== undefined) gaps.set(p.stream, [...(gaps.get(p.stream) ?? []), now - before])
      last.set(p.stream, now)
      now += 1_200
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    for (const name of Object.keys(rates)) expect(Math.max(...(gaps.get(name) ?? [Infinity]))).toBeLessThanOrEqual(60_000)
    expect(mean(gaps.get('jobs')!)).toBeLessThan(mean(gaps.get('clients')!) / 2)
  })
})

describe('resting after sweeps that found nothing', () => {
  test.each([
    { rest: 0, changed: false, next: FIRST_REST_MS, why: 'the first empty sweep: the first rest' },
    { rest: 1_000, changed: false, next: 2_000, why: 'each further one doubles it' },
    { rest: 16_000, changed: false, next: 32_000, why: 'doubling' },
    { rest: 32_000, changed: false, next: 60_000, why: 'never past the bound' },
    { rest: 60_000, changed: false, next: 60_000, why: 'an idle stream stays at the bound' },
    { rest: 60_000, changed: true, next: 0, why: 'a sweep that changed rows: no rest' },
  ])('restAfterSweep($rest, changed $changed) = $next: $why', ({ rest, changed, next }) => {
    expect(restAfterSweep(rest, changed, 60_000)).toBe(next)
  })

  test.each([
    { rest: 60_000, own: true, next: 0, why: 'its own change (a webhook for it): no rest' },
    { rest: 60_000, own: false, next: 30_000, why: "another stream's change: half the rest" },
    { rest: 2_000, own: false, next: 1_000, why: 'halved down to the first rest' },
    { rest: 1_500, own: false, next: 0, why: 'below the first rest: none' },
    { rest: 0, own: false, next: 0, why: 'none stays none' },
  ])('restAfterActivity($rest, own $own) = $next: $why', ({ rest, own, next }) => {
    expect(restAfterActivity(rest, own)).toBe(next)
  })

  const resting = (name: string, ageSeconds: number, restSeconds: number, changeRate = 0): PlannedStream => ({
    ...stream(name, ageSeconds, changeRate),
    restMs: restSeconds * 1000,
  })

  test('a resting stream is passed over for one awake, however busy it was', () => {
    expect(plan([resting('jobs', 2, 4, 5), resting('clients', 3, 1)])).toEqual({ kind: 'sweep', stream: 'clients', reason: 'stalest' })
  })

  test('every stream resting: wait for the first to wake', () => {
    expect(plan([resting('jobs', 2, 4), resting('clients', 3, 8)])).toEqual({ kind: 'wait', until: NOW + 2_000 })
    // A failed stream's retry that comes sooner ends the wait sooner.
    expect(plan([resting('jobs', 2, 4), { ...stream('clients', 1), retryAt: NOW + 500 }])).toEqual({ kind: 'wait', until: NOW + 500 })
  })

  test('the bound takes a stream at rest: it is due a round of the others before the bound', () => {
    // Rest 60 s, bound 60 s, 1.2 s a request; clients rests past the bound of jobs and does not
    // count: jobs is due when its own sweep would end at the bound, at 58.8 s.
    const idle = [resting('jobs', 58, 60), resting('clients', 10, 60)]
    expect(plan(idle)).toEqual({ kind: 'wait', until: NOW + 800 })
    expect(plan([resting('jobs', 58.8, 60), resting('clients', 10, 60)])).toEqual({ kind: 'sweep', stream: 'jobs', reason: 'due' })
  })

  // A loop over the planner on a fake clock: each sweep takes one request of 1.2 s, and finds the
  // changes its stream had since its last sweep.
  function simulate(minutes: number, changesAt: (name: string, from: number, to: number) => number) {
    const names = ['clients', 'jobs', 'visits', 'invoices', 'objects:a', 'objects:b']
    const state = new Map(names.map((n) => [n, { last: undefined as number | undefined, rest: 0, rate: new ChangeRate() }]))
    const sweeps: { at: number; stream: string; found: number }[] = []
    let now = 0
    while (now < minutes * 60_000) {
      const p = planNext({
        now,
        streams: names.map((name) => {
          const s = state.get(name)!
          return { name, lastStartedAt: s.last, changeRate: s.rate.perSecond(now), cost: 1, restMs: s.rest }
        }),
        maxIntervalMs: 60_000,
        requestMs: 1_200,
      })
      if (p.kind === 'wait') now = p.until
      if (p.kind !== 'sweep') continue
      const s = state.get(p.stream)!
      const found = changesAt(p.stream, s.last ?? -Infinity, now)
      s.last = now
      sweeps.push({ at: now, stream: p.stream, found })
      now += 1_200
      s.rate.add(found, now)
      s.rest = restAfterSweep(s.rest, found > 0, 60_000)
      if (found > 0) for (const [name, o] of state) o.rest = restAfterActivity(o.rest, name === p.stream)
    }
    return sweeps
  }

  test('an idle account: about one sweep per stream per bound, none waiting past it', () => {
    const sweeps = simulate(60, () => 0)
    for (let minute = 5; minute < 60; minute++) {
      const inMinute = sweeps.filter((s) => s.at >= minute * 60_000 && s.at < (minute + 1) * 60_000)
      expect(inMinute.length).toBeLessThanOrEqual(7)
    }
    for (const name of ['clients', 'objects:b']) {
      const at = sweeps.filter((s) => s.stream === name).map((s) => s.at)
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeLessThanOrEqual(60_000)
    }
  })

  test('the first change after an idle hour is swept within the bound; the account wakes up', () => {
    const changeAt = 3_600_000 + 17_000
    const sweeps = simulate(63, (name, from, to) => (name === 'visits' && from < changeAt && changeAt <= to ? 1 : 0))
    const found = sweeps.find((s) => s.found > 0)!
    expect(found.stream).toBe('visits')
    expect(found.at - changeAt).toBeLessThanOrEqual(60_000)
    // After the change: visits is swept again at once and ever less often, and the others' rests
    // are halved (every stream swept within half the bound and one round).
    const next = sweeps.filter((s) => s.at > found.at && s.at <= found.at + 60_000)
    expect(next.filter((s) => s.stream === 'visits').length).toBeGreaterThanOrEqual(4)
    expect(next.find((s) => s.stream === 'visits')!.at).toBeLessThanOrEqual(found.at + 6 * 1_200)
    const soon = new Set(next.filter((s) => s.at <= found.at + 30_000 + 6 * 1_200).map((s) => s.stream))
    expect(soon.size).toBe(6)
  })

  test('under a change a second, the back-off costs no sweeps: the share stays used', () => {
    const weights: Record<string, number> = { jobs: 0.35, visits: 0.35, clients: 0.1, invoices: 0.1, 'objects:a': 0.05, 'objects:b': 0.05 }
    // Changes at their expected counts (no randomness): rate x elapsed, whole changes.
    const sweeps = simulate(10, (name, from, to) => {
      const count = (t: number) => Math.floor((weights[name]! * Math.max(0, t)) / 1000)
      return count(to) - count(from === -Infinity ? 0 : from)
    })
    expect(sweeps.length).toBeGreaterThanOrEqual((10 * 60_000) / 1_200 - 5)
  })
})

describe('ChangeRate', () => {
  test('counts changes per second and forgets them with its half-life', () => {
    const r = new ChangeRate(60_000)
    expect(r.perSecond(0)).toBe(0)
    r.add(10, 0)
    const fresh = r.perSecond(0)
    expect(fresh).toBeGreaterThan(0)
    expect(r.perSecond(60_000)).toBeCloseTo(fresh / 2, 10)
    r.add(10, 60_000)
    expect(r.perSecond(60_000)).toBeCloseTo(fresh * 1.5, 10)
  })
})

describe('retryDelayMs', () => {
  test('5 s doubling, never past the bound', () => {
    expect([1, 2, 3, 4, 5, 50].map((f) => retryDelayMs(f, 60_000))).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000])
  })
})
