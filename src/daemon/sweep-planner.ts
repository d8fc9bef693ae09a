// Which stream the continuous sweep takes next: a pure function of what the loop knows (README.md,
// Continuous sweeping). Two rules, in order:
//
// 1. The bound. A stream that would pass `maxIntervalMs` since its last sweep began if it waited
//    behind one sweep of every other stream is due: the due stream that waited longest goes first.
//    So no stream waits longer than the bound while the budget allows a round within it.
// 2. Otherwise the stream whose sweep now removes the most staleness per request: changes arrive
//    at `changeRate` per second, so those waiting since the last sweep have aged, together, about
//    rate x age^2 / 2. Picking the largest rate x age^2 / cost sweeps each stream at intervals
//    proportional to sqrt(cost / rate), which minimises the mean staleness of a change for a
//    budget (the square-root rule); a cold stream still rises with age^2 until rule 1 takes it.
//
// A stream whose last sweep failed waits out its back-off (`retryAt`) and is not planned until then.

export interface PlannedStream {
  name: string
  /** Clock ms its last sweep began (undefined: not swept yet, which goes first). */
  lastStartedAt?: number | undefined
  /** Changes per second it saw lately (sweeps and webhooks); see ChangeRate. */
  changeRate: number
  /** Requests a sweep of it costs, on average (at least 1). */
  cost: number
  /** Clock ms before which it is not swept again (a back-off after a failure). */
  retryAt?: number | undefined
}

export interface PlanInput {
  now: number
  streams: readonly PlannedStream[]
  /** The staleness bound: longest time between the starts of two sweeps of one stream. */
  maxIntervalMs: number
  /** Time one request of the sweeps' share takes at its pace (window / share limit). */
  requestMs: number
}

export type Plan =
  | { kind: 'sweep'; stream: string; reason: 'first' | 'due' | 'stalest' }
  /** Every stream is backing off: nothing to sweep before `until`. */
  | { kind: 'wait'; until: number }
  | { kind: 'idle' }

/** A rate floor, so that a stream that never changes still ages (1 change a day). */
export const FLOOR_RATE = 1 / 86_400

export function planNext(input: PlanInput): Plan {
  const { now, maxIntervalMs, requestMs } = input
  const ready = input.streams.filter((s) => s.retryAt === undefined || s.retryAt <= now)
  if (ready.length === 0) {
    const waits = input.streams.map((s) => s.retryAt ?? now)
    return waits.length === 0 ? { kind: 'idle' } : { kind: 'wait', until: Math.min(...waits) }
  }
  const first = ready.find((s) => s.lastStartedAt === undefined)
  if (first !== undefined) return { kind: 'sweep', stream: first.name, reason: 'first' }
  const round = ready.reduce((sum, s) => sum + Math.max(1, s.cost), 0) * requestMs
  const ageOf = (s: PlannedStream) => now - (s.lastStartedAt ?? now)
  let due: PlannedStream | undefined
  for (const s of ready) {
    const others = round - Math.max(1, s.cost) * requestMs
    if (ageOf(s) + others < maxIntervalMs) continue
    if (due === undefined || ageOf(s) > ageOf(due)) due = s
  }
  if (due !== undefined) return { kind: 'sweep', stream: due.name, reason: 'due' }
  let best: PlannedStream | undefined
  let bestValue = Number.NEGATIVE_INFINITY
  for (const s of ready) {
    const age = Math.max(0, ageOf(s)) / 1000
    const value = (Math.max(FLOOR_RATE, s.changeRate) * age * age) / Math.max(1, s.cost)
    if (value > bestValue) {
      best = s
      bestValue = value
    }
  }
  return best === undefined ? { kind: 'idle' } : { kind: 'sweep', stream: best.name, reason: 'stalest' }
}

/**
 * A change rate that forgets: changes seen are counted with an exponential decay of `halfLifeMs`,
 * so a stream that was busy an hour ago and is quiet now is planned as quiet. Pure: every call
 * takes the time.
 */
export class ChangeRate {
  #count = 0
  #at: number | undefined
  readonly #tauMs: number

  constructor(halfLifeMs = 300_000) {
    this.#tauMs = halfLifeMs / Math.LN2
  }

  /** `n` changes seen at `at`. */
  add(n: number, at: number): void {
    this.#count = this.#decayed(at) + n
    this.#at = Math.max(at, this.#at ?? at)
  }

  /** Changes per second at `now`. */
  perSecond(now: number): number {
    return this.#decayed(now) / (this.#tauMs / 1000)
  }

  #decayed(now: number): number {
    if (this.#at === undefined) return 0
    return this.#count * Math.exp(-Math.max(0, now - this.#at) / this.#tauMs)
  }
}

/** The back-off after `failures` failed sweeps in a row: 5 s doubling, at most `maxMs`. */
export function retryDelayMs(failures: number, maxMs: number): number {
  return Math.min(maxMs, 5_000 * 2 ** Math.max(0, Math.min(20, failures - 1)))
}
