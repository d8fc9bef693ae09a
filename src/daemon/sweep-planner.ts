// Which stream the continuous sweep takes next: a pure function of what the loop knows (docs/sweeping.md,
// Continuous sweeping). Two rules, in order:
//
// 1. The bound. A stream whose next sweep would end past `maxIntervalMs` since its last sweep began
//    if it waited behind one sweep of every other stream that may go first (awake, or waking or
//    reaching the bound before it does) is due: the due stream that waited longest goes first. So
//    no stream waits longer than the bound while the budget allows a round within it.
// 2. Otherwise the stream whose sweep now removes the most staleness per request: changes arrive
//    at `changeRate` per second, so those waiting since the last sweep have aged, together, about
//    rate x age^2 / 2. Picking the largest rate x age^2 / cost sweeps each stream at intervals
//    proportional to sqrt(cost / rate), which minimises the mean staleness of a change for a
//    budget (the square-root rule); a cold stream still rises with age^2 until rule 1 takes it.
//
// A stream whose last sweep failed waits out its back-off (`retryAt`); one resting after sweeps that
// found nothing (`restMs`, restAfterSweep) is left to rule 1 until its rest ends.

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
  /** How long it rests after its last sweep began before rule 2 takes it again (0 or undefined: none). */
  restMs?: number | undefined
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
  /** Every stream is backing off or resting: nothing to sweep before `until`. */
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
  const ageOf = (s: PlannedStream) => now - (s.lastStartedAt ?? now)
  const bound = (s: PlannedStream) => (s.lastStartedAt ?? now) + maxIntervalMs
  const restsUntil = (s: PlannedStream) => (s.lastStartedAt ?? now) + (s.restMs ?? 0)
  // When a stream is due: its own sweep and one of each stream that may go before it would take it
  // past the bound. Streams resting past its bound do not count, so idle streams come due at the
  // bound less one sweep, rather than earlier by a round none of them will take.
  const dueAt = (s: PlannedStream) => {
    let ahead = Math.max(1, s.cost)
    for (const o of ready) if (o !== s && Math.min(restsUntil(o), bound(o)) < bound(s)) ahead += Math.max(1, o.cost)
    return bound(s) - ahead * requestMs
  }
  let due: PlannedStream | undefined
  for (const s of ready) {
    if (now < dueAt(s)) continue
    if (due === undefined || ageOf(s) > ageOf(due)) due = s
  }
  if (due !== undefined) return { kind: 'sweep', stream: due.name, reason: 'due' }
  const awake = ready.filter((s) => restsUntil(s) <= now)
  if (awake.length === 0) {
    // Every stream rests: the first to wake (or fall due), or a failed one's retry if sooner.
    const wakes = ready.map((s) => Math.min(restsUntil(s), dueAt(s)))
    const retries = input.streams.flatMap((s) => (s.retryAt !== undefined && s.retryAt > now ? [s.retryAt] : []))
    return { kind: 'wait', until: Math.ceil(Math.min(...wakes, ...retries)) }
  }
  let best: PlannedStream | undefined
  let bestValue = Number.NEGATIVE_INFINITY
  for (const s of awake) {
    const age = Math.max(0, ageOf(s)) / 1000
    const value = (Math.max(FLOOR_RATE, s.changeRate) * age * age) / Math.max(1, s.cost)
    if (value > bestValue) {
      best = s
      bestValue = value
    }
  }
  return best === undefined ? { kind: 'idle' } : { kind: 'sweep', stream: best.name, reason: 'stalest' }
}

/** The first rest after a sweep that found nothing; each further one doubles it. */
export const FIRST_REST_MS = 1_000

/**
 * A stream's rest after one of its sweeps: none when the sweep changed rows (or stopped at its page
 * cap with more to read); otherwise twice the rest it had (FIRST_REST_MS the first time), at most
 * `maxMs` (the bound). So a stream idle for a minute is swept about once per bound.
 */
export function restAfterSweep(restMs: number, changed: boolean, maxMs: number): number {
  if (changed) return 0
  return Math.min(maxMs, Math.max(FIRST_REST_MS, restMs * 2))
}

/**
 * A stream's rest once its backfill (its first walk to the end) is done: the bound, as if it had
 * been quiet that long. Starting at FIRST_REST_MS instead, every stream of a freshly backfilled
 * account was swept again four or five times in the next 40 s at the share's pace (about 30
 * requests, a sweep every 1-2 s), so its mirror was never idle long enough to be parked. Rule 1
 * still sweeps it within the bound, and a webhook for it ends the rest.
 */
export function restAfterBackfill(maxMs: number): number {
  return maxMs
}

/**
 * A stream's rest after a change seen on the account: none when the change is its own (a webhook
 * for it); halved when it is another stream's (a sweep that changed rows, a webhook), since one
 * change in an account makes more likely (someone is at work in the web app); below the first rest,
 * none.
 */
export function restAfterActivity(restMs: number, own: boolean): number {
  if (own) return 0
  const half = restMs / 2
  return half < FIRST_REST_MS ? 0 : half
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
