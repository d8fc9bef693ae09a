// The continuous sweeps' planner is a pure function: the stream that next removes the most
// staleness per request, except that a stream about to pass the bound goes first.
import { describe, expect, test } from 'vitest'
import { ChangeRate, planNext, retryDelayMs, type PlannedStream } from '../../../src/daemon/sweep-planner.js'

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
    // One round of the other two takes 2 x 1.2 s; 58 s + 2.4 s passes 60 s.
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
