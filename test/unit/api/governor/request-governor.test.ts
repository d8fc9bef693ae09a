// The governor shell on a fake clock: slots, pacing, aborts, pauses, the concurrency cap, state().
import { describe, expect, test } from 'vitest'
import { FakeClock } from '../../../support/fake-clock.js'
import { RequestGovernor, type Slot } from '../../../../src/api/governor/request-governor.js'
import { FencedError } from '../../../../src/api/governor/fenced.js'

function setup(limitPerMinute = 60, extra: Partial<ConstructorParameters<typeof RequestGovernor>[0]> = {}) {
  const clock = new FakeClock()
  const governor = new RequestGovernor({ limitPerMinute, marginMs: 0, burst: 1, clock, ...extra })
  const t0 = clock.now()
  return { clock, governor, t0 }
}

describe('RequestGovernor', () => {
  test('paces starts one window/limit apart and reports them in state()', async () => {
    const { clock, governor, t0 } = setup(60)
    const starts: number[] = []
    for (let i = 0; i < 5; i++) void governor.schedule('sweep', (slot) => Promise.resolve(starts.push(slot.startedAt - t0)))
    await clock.advance(10_000)
    expect(starts).toEqual([0, 1_000, 2_000, 3_000, 4_000])
    expect(governor.state()).toMatchObject({ limit: 60, effectiveLimit: 60, sentLastMinute: 5, pausedUntil: null })
  })

  test('queues by priority and reports queue lengths', async () => {
    const { clock, governor } = setup(60, { maxInFlight: 1 })
    const order: string[] = []
    const held = await governor.acquire('sweep')
    const done = (['reconcile', 'trigger', 'sweep', 'webhook'] as const).map((p) =>
      governor.schedule(p, () => Promise.resolve(order.push(p))),
    )
    expect(governor.state().queued).toEqual({ webhook: 1, sweep: 1, trigger: 1, reconcile: 1 })
    held.release()
    await clock.advance(10_000)
    await Promise.all(done)
    expect(order).toEqual(['webhook', 'sweep', 'trigger', 'reconcile'])
  })

  test('an abort while queued removes the request and rejects with the reason', async () => {
    const { clock, governor } = setup(60, { maxInFlight: 1 })
    const held = await governor.acquire('sweep')
    const controller = new AbortController()
    const waiting = governor.acquire('reconcile', controller.signal)
    expect(governor.state().queued.reconcile).toBe(1)
    controller.abort(new Error('shutting down'))
    await expect(waiting).rejects.toThrow('shutting down')
    expect(governor.state().queued.reconcile).toBe(0)
    held.release()
    await clock.advance(5_000)
    expect(governor.state().sentLastMinute).toBe(1)
  })

  test('an already aborted signal rejects at once', async () => {
    const { governor } = setup()
    const controller = new AbortController()
    controller.abort()
    await expect(governor.acquire('sweep', controller.signal)).rejects.toThrow()
  })

  test('pause() holds every start until the given time', async () => {
    const { clock, governor, t0 } = setup(600)
    governor.pause(t0 + 30_000)
    expect(governor.state().pausedUntil).toBe(t0 + 30_000)
    let slot: Slot | undefined
    void governor.acquire('webhook').then((s) => (slot = s))
    await clock.advance(29_999)
    expect(slot).toBeUndefined()
    await clock.advance(1)
    expect(slot?.startedAt).toBe(t0 + 30_000)
    expect(governor.state().pausedUntil).toBeNull()
  })

  test('at most maxInFlight requests run at once; release frees a place', async () => {
    const { clock, governor } = setup(6_000, { maxInFlight: 2 })
    const slots: Slot[] = []
    for (let i = 0; i < 3; i++) void governor.acquire('sweep').then((s) => slots.push(s))
    await clock.advance(1_000)
    expect(slots).toHaveLength(2)
    expect(governor.state().inFlight).toBe(2)
    slots[0]?.release()
    slots[0]?.release() // idempotent
    await clock.advance(1_000)
    expect(slots).toHaveLength(3)
    expect(governor.state().inFlight).toBe(2)
  })

  test('schedule releases the slot when the function throws', async () => {
    const { clock, governor } = setup(60, { maxInFlight: 1 })
    await expect(governor.schedule('sweep', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(governor.state().inFlight).toBe(0)
    await clock.advance(1)
  })

  test('headers showing another client lower the effective limit, never above the configured one', () => {
    const { clock, governor } = setup(60)
    const changes: number[] = []
    const g = new RequestGovernor({ limitPerMinute: 60, clock, onBudgetChange: (c) => changes.push(c.to) })
    g.observe({ startedAt: clock.now(), at: clock.now(), status: 200, limitHeader: 60, remainingHeader: 10 })
    expect(g.state().effectiveLimit).toBe(10)
    expect(changes).toEqual([10])
    g.observe({ startedAt: clock.now(), at: clock.now(), status: 200, limitHeader: 1_000, remainingHeader: 1_000 })
    expect(g.state().effectiveLimit).toBeLessThanOrEqual(60)
    expect(governor.state().effectiveLimit).toBe(60)
  })
  // Regression (soak, 2026-11-23): a daemon restarted after SIGKILL began with an empty window and
  // started 61 requests in one 60 s window against a budget of 60.
  test('priorStarts from an earlier process count against the window; onStart reports each start', async () => {
    const clock = new FakeClock()
    const t0 = clock.now()
    const recorded: number[] = []
    const prior = Array.from({ length: 5 }, (_, i) => t0 - 50_000 + i * 1_000)
    const governor = new RequestGovernor({
      limitPerMinute: 5,
      marginMs: 0,
      burst: 1,
      clock,
      priorStarts: prior,
      onStart: (at) => recorded.push(at),
    })
    expect(governor.state().sentLastMinute).toBe(5)
    const starts: number[] = []
    void governor.schedule('sweep', (slot) => Promise.resolve(starts.push(slot.startedAt - t0)))
    await clock.advance(20_000)
    // The oldest prior start (t0 - 50 s) leaves the window at t0 + 10 s: not before.
    expect(starts).toEqual([10_000])
    expect(recorded).toEqual([t0 + 10_000])
  })
  test('prior starts later than the clock (stepped back) do not hold the governor', async () => {
    const clock = new FakeClock()
    const t0 = clock.now()
    const governor = new RequestGovernor({ limitPerMinute: 5, marginMs: 0, burst: 1, clock, priorStarts: [t0 + 600_000] })
    const starts: number[] = []
    void governor.schedule('sweep', (slot) => Promise.resolve(starts.push(slot.startedAt - t0)))
    await clock.advance(1_000)
    expect(starts).toEqual([0])
  })

  test('with a shared window, each start is claimed there first; a refusal holds the governor until the start in the way leaves, without a pause', async () => {
    const clock = new FakeClock()
    const t0 = clock.now()
    // Another process already started 2 of a limit of 3, 30 s ago and 10 s ago.
    const shared = [t0 - 30_000, t0 - 10_000]
    const claims: number[] = []
    const governor = new RequestGovernor({
      limitPerMinute: 3,
      marginMs: 0,
      burst: 3,
      clock,
      shared: {
        claim: (limit, windowMs) => {
          const now = clock.now()
          claims.push(now - t0)
          const inWindow = shared.filter((t) => t > now - windowMs).sort((a, b) => b - a)
          const blocking = inWindow[limit - 1]
          if (blocking !== undefined) return { granted: false, retryAt: blocking + windowMs }
          shared.push(now)
          return { granted: true }
        },
      },
    })
    const starts: number[] = []
    for (let i = 0; i < 3; i++) void governor.schedule('sweep', (slot) => Promise.resolve(starts.push(slot.startedAt - t0)))
    await clock.advance(1)
    // One start fits now; the next waits for the other process's start of t0 - 30 s to leave.
    expect(starts).toEqual([0])
    expect(governor.state().pausedUntil).toBeNull()
    await clock.advance(60_000)
    expect(starts).toEqual([0, 30_000, 50_000])
    // Asked only when a start was due: at t0, twice at t0 (granted, refused), then at each retry.
    expect(claims).toEqual([0, 0, 30_000, 30_000, 50_000])
  })

  test('the permit is asked after the wait for the budget: a refusal then fails every waiting request with FencedError, nothing starts', async () => {
    let owned = true
    const asked: number[] = []
    const { clock, governor, t0 } = setup(60, {
      permit: () => {
        asked.push(clock.now() - t0)
        return owned
      },
    })
    const starts: number[] = []
    const results = Array.from({ length: 5 }, () =>
      governor.acquire('sweep').then(
        (slot) => {
          starts.push(slot.startedAt - t0)
          slot.release()
          return 'started'
        },
        (err: unknown) => (err instanceof FencedError ? 'fenced' : 'other'),
      ),
    )
    await clock.advance(1_500)
    expect(starts).toEqual([0, 1_000])
    // The lease passes while the third waits for its slot (due at 2 s): the check at 2 s says no.
    owned = false
    await clock.advance(10_000)
    expect(await Promise.all(results)).toEqual(['started', 'started', 'fenced', 'fenced', 'fenced'])
    expect(asked.at(-1)).toBe(2_000)
    expect(governor.state()).toMatchObject({ sentLastMinute: 2, inFlight: 0, queued: { sweep: 0 } })
    await expect(governor.acquire('webhook')).rejects.toBeInstanceOf(FencedError)
    expect(governor.waiting()).toEqual([])
  })

  test('with a shared window, a refused permit claims nothing there', async () => {
    let owned = true
    const claims: number[] = []
    const { clock, governor, t0 } = setup(60, {
      permit: () => owned,
      shared: {
        claim: () => {
          claims.push(clock.now() - t0)
          return { granted: true }
        },
      },
    })
    const first = await governor.acquire('sweep')
    first.release()
    const second = governor.acquire('sweep').catch((err: unknown) => err)
    owned = false
    await clock.advance(5_000)
    expect(await second).toBeInstanceOf(FencedError)
    expect(claims).toEqual([0])
  })
})
