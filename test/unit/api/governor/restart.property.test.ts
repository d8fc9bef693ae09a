// A restart: one process's governor makes starts and is killed (SIGKILL, a crash); a new process
// comes up later and builds its governor with the starts of the last window as `priorStarts`, as
// the daemon does from the mirror's request_starts. The key sees both processes' starts, so their
// union must stay within the limit in every sliding 60 s window, whatever the timing of the kill
// and of the new process's start.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { FakeClock } from '../../../support/fake-clock.js'
import { PRIORITIES, RequestGovernor, type Priority } from '../../../../src/api/governor/index.js'
import { maxInWindow } from '../../../support/governor-sim.js'

const WINDOW = 60_000

interface Arrival {
  /** After the governor was built. */
  atMs: number
  priority: Priority
  serviceMs: number
}

interface Scenario {
  limit: number
  burst: number
  marginMs: number
  maxInFlight: number
  before: Arrival[]
  /** How long the first process lives. */
  killAfterMs: number
  /** Between the kill and the new process's governor. */
  downMs: number
  after: Arrival[]
}

/** Builds a governor on `clock`, schedules `arrivals` on it, and collects every start time. */
function run(
  clock: FakeClock,
  arrivals: readonly Arrival[],
  s: Scenario,
  priorStarts?: number[],
): { starts: number[]; governor: RequestGovernor } {
  const governor = new RequestGovernor({
    limitPerMinute: s.limit,
    burst: s.burst,
    marginMs: s.marginMs,
    maxInFlight: s.maxInFlight,
    clock,
    ...(priorStarts === undefined ? {} : { priorStarts }),
  })
  const starts: number[] = []
  for (const a of arrivals) {
    clock.setTimer(a.atMs, () => {
      void governor.schedule(a.priority, async (slot) => {
        starts.push(slot.startedAt)
        await clock.sleep(a.serviceMs)
      })
    })
  }
  return { starts, governor }
}

/** The first process until its kill, then the second one until it has started everything. */
async function restart(s: Scenario, carry: boolean): Promise<{ first: number[]; second: number[] }> {
  const t0 = Date.UTC(2026, 0, 1)
  const firstClock = new FakeClock(t0)
  const first = run(firstClock, s.before, s).starts
  // Killed: its clock stops, so nothing it still had queued or in flight ever starts.
  await firstClock.advance(s.killAfterMs)
  const restartAt = t0 + s.killAfterMs + s.downMs
  // What the mirror's ledger hands the new process: the starts within the window ending now.
  const prior = first.filter((t) => t > restartAt - WINDOW)
  const secondClock = new FakeClock(restartAt)
  const second = run(secondClock, s.after, s, carry ? prior : undefined).starts
  await secondClock.runAll()
  return { first, second }
}

const arrival = fc.record({
  atMs: fc.integer({ min: 0, max: 90_000 }),
  priority: fc.constantFrom(...PRIORITIES),
  serviceMs: fc.integer({ min: 0, max: 3_000 }),
})

const scenario: fc.Arbitrary<Scenario> = fc.record({
  limit: fc.integer({ min: 1, max: 60 }),
  burst: fc.integer({ min: 1, max: 10 }),
  marginMs: fc.constantFrom(0, 250),
  maxInFlight: fc.integer({ min: 1, max: 8 }),
  before: fc.array(arrival, { maxLength: 120 }),
  killAfterMs: fc.integer({ min: 0, max: 150_000 }),
  downMs: fc.integer({ min: 0, max: 90_000 }),
  after: fc.array(arrival, { minLength: 1, maxLength: 120 }),
})

describe('the governor across a restart', () => {
  test('prior starts plus new starts never exceed the limit in any 60 s window', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const { first, second } = await restart(s, true)
        expect(maxInWindow([...first, ...second], WINDOW)).toBeLessThanOrEqual(s.limit)
        // The new process is held back, not starved: everything it was asked for started.
        expect(second).toHaveLength(s.after.length)
      }),
      { numRuns: 100 },
    )
  })

  test('without the prior starts the same restart passes the limit (what the property guards against)', async () => {
    // The first process spends its whole budget in its last minute and dies; the new one comes up
    // a second later with a backlog.
    const burstOf = (n: number): Arrival[] => Array.from({ length: n }, () => ({ atMs: 0, priority: 'sweep', serviceMs: 10 }))
    const s: Scenario = {
      limit: 10,
      burst: 10,
      marginMs: 250,
      maxInFlight: 4,
      before: burstOf(10),
      killAfterMs: 5_000,
      downMs: 1_000,
      after: burstOf(10),
    }
    const forgot = await restart(s, false)
    expect(forgot.first).toHaveLength(10)
    expect(maxInWindow([...forgot.first, ...forgot.second], WINDOW)).toBeGreaterThan(s.limit)
    const carried = await restart(s, true)
    expect(maxInWindow([...carried.first, ...carried.second], WINDOW)).toBeLessThanOrEqual(s.limit)
    // The oldest carried start leaves the window a minute after it was made: not before.
    expect(Math.min(...carried.second)).toBeGreaterThanOrEqual(Math.min(...carried.first) + WINDOW)
  })
})
