// The pure decision core of the request governor: who starts next, and when. No timers, no
// promises: every method takes `now`, so a property test can simulate hours in a loop.
//
// Rules (docs/sweeping.md, The request budget; docs/guarantees.md, Within budget):
// - A hard sliding window: never more than the effective limit of starts in any `windowMs +
//   marginMs` (the margin absorbs network jitter between our start and the server's arrival).
// - Pacing inside the window (GCRA: one start per window/limit, a burst of `burst`), so the budget
//   is spread evenly instead of spent in a burst and then blocked for a minute.
// - Priorities webhook > sweep > trigger > reconcile (backfill uses 'reconcile'). Against
//   starvation a waiting request gains one level per `agingMs` of waiting; at equal level the
//   older request goes first. So a reconcile request waits at most 3 agingMs before it ranks
//   with fresh webhook fetches, and is then only behind requests queued before it.
// - A pause (429) stops every start until it ends; a concurrency cap bounds requests in flight.
// - A deferral (another process on the key holds the shared window) also stops every start until
//   it ends; it is not a 429 and is not reported as a pause. The shell asks the shared window
//   before each start (readyAt, then poll with maxStarts 1) and defers when it refuses.
import { AdaptiveLimit, type BudgetChange } from './adaptive-limit.js'
import { ClockStepWatch, pullBack } from './clock-step.js'
import { SlidingWindow } from './sliding-window.js'

export const PRIORITIES = ['webhook', 'sweep', 'trigger', 'reconcile'] as const
export type Priority = (typeof PRIORITIES)[number]

export interface GovernorOptions {
  /** Configured starts per window (FSM_RATE_LIMIT). */
  limitPerMinute: number
  /** Requests in flight at once. Default 4. */
  maxInFlight?: number
  /** Default 60,000 (spec, Limits). */
  windowMs?: number
  /** Extra spacing added to the window against jitter. Default 250 ms. */
  marginMs?: number
  /** Starts allowed back to back after an idle spell. Default 2 (also absorbs late timers). */
  burst?: number
  /** Waiting time that raises a request one priority level. Default 60 s. */
  agingMs?: number
  /** Floor and recovery of the adaptive limit (see AdaptiveLimit). */
  minLimit?: number
  recoverStep?: number
  recoverEveryMs?: number
  /**
   * Start times (oldest first) that another process made with this key within the last window:
   * counted as if this governor had made them, so a restart does not begin with a fresh minute.
   */
  priorStarts?: readonly number[]
  /** Prior starts after this time are ignored (the current time of the governor's clock). */
  priorStartsBefore?: number
  /** Told of every start, so it can be recorded for the next process (see priorStarts). */
  onStart?: (at: number) => void
}

export interface Ticket {
  readonly id: number
  readonly priority: Priority
  readonly level: number
  readonly enqueuedAt: number
  status: 'queued' | 'started' | 'cancelled'
}

export interface GovernorState {
  limit: number
  effectiveLimit: number
  sentLastMinute: number
  inFlight: number
  queued: Record<Priority, number>
  /** Epoch ms the governor is paused until, or null. */
  pausedUntil: number | null
}

export interface RateObservation {
  /** Start time of the request the answer belongs to (its slot's `startedAt`). */
  startedAt: number
  at: number
  status: number
  limitHeader?: number | undefined
  remainingHeader?: number | undefined
}

export class GovernorCore {
  readonly limit: number
  readonly maxInFlight: number
  readonly #marginMs: number
  readonly #burst: number
  readonly #agingMs: number
  readonly #window: SlidingWindow
  readonly #budget: AdaptiveLimit
  readonly #queues: Ticket[][] = PRIORITIES.map(() => [])
  readonly #heads: number[] = PRIORITIES.map(() => 0)
  readonly #counts: number[] = PRIORITIES.map(() => 0)
  #nextId = 1
  #inFlight = 0
  #tat = Number.NEGATIVE_INFINITY
  #pausedUntil = Number.NEGATIVE_INFINITY
  #deferredUntil = Number.NEGATIVE_INFINITY
  /** Notices the clock stepping back (see #see). */
  readonly #steps = new ClockStepWatch()
  readonly #onStart: ((at: number) => void) | undefined

  constructor(options: GovernorOptions) {
    const limit = options.limitPerMinute
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limitPerMinute must be a positive integer, got ${limit}`)
    this.limit = limit
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 4)
    this.#marginMs = Math.max(0, options.marginMs ?? 250)
    this.#burst = Math.max(1, options.burst ?? 2)
    this.#agingMs = options.agingMs ?? 60_000
    this.#window = new SlidingWindow(limit, options.windowMs ?? 60_000)
    this.#budget = new AdaptiveLimit({
      limit,
      slack: this.maxInFlight,
      ...(options.minLimit === undefined ? {} : { minLimit: options.minLimit }),
      ...(options.recoverStep === undefined ? {} : { recoverStep: options.recoverStep }),
      ...(options.recoverEveryMs === undefined ? {} : { recoverEveryMs: options.recoverEveryMs }),
    })
    this.#onStart = options.onStart
    const spacing = (this.#window.windowMs + this.#marginMs) / limit
    // A prior start later than now (a clock stepped back) would hold every start until it passed.
    const horizon = options.priorStartsBefore ?? Number.POSITIVE_INFINITY
    for (const at of options.priorStarts ?? []) {
      if (at > horizon) continue
      this.#window.record(at)
      this.#tat = Math.max(this.#tat, at) + spacing
    }
  }

  get effectiveLimit(): number {
    return this.#budget.effective
  }

  get windowMs(): number {
    return this.#window.windowMs
  }

  /** The span in which at most the effective limit of starts may fall: the window plus the margin. */
  get guardedWindowMs(): number {
    return this.#window.windowMs + this.#marginMs
  }

  enqueue(priority: Priority, now: number): Ticket {
    this.#see(now)
    const level = PRIORITIES.indexOf(priority)
    if (level < 0) throw new RangeError(`unknown priority ${priority as string}`)
    const ticket: Ticket = { id: this.#nextId++, priority, level, enqueuedAt: now, status: 'queued' }
    this.#queues[level]?.push(ticket)
    this.#counts[level] = (this.#counts[level] ?? 0) + 1
    return ticket
  }

  /** Removes a queued ticket; false when it already started. */
  cancel(ticket: Ticket): boolean {
    if (ticket.status !== 'queued') return false
    ticket.status = 'cancelled'
    this.#counts[ticket.level] = (this.#counts[ticket.level] ?? 1) - 1
    return true
  }

  /**
   * When the next queued request may start (`now` or later), without starting it: undefined when
   * nothing waits or the concurrency cap is reached (a finish or an enqueue changes that).
   */
  readyAt(now: number): number | undefined {
    this.#see(now)
    this.#budget.recover(now)
    if (this.#inFlight >= this.maxInFlight || this.#pick(now) === undefined) return undefined
    return this.nextStartAt()
  }

  /**
   * Starts every ticket that may start at `now`, at most `maxStarts`; `wakeAt` is when to poll
   * again (if waiting on time).
   */
  poll(now: number, maxStarts = Number.POSITIVE_INFINITY): { started: Ticket[]; wakeAt: number | undefined } {
    this.#see(now)
    this.#budget.recover(now)
    const started: Ticket[] = []
    while (this.#inFlight < this.maxInFlight && started.length < maxStarts) {
      const next = this.#pick(now)
      if (next === undefined) return { started, wakeAt: undefined }
      const at = this.nextStartAt()
      if (at > now) return { started, wakeAt: at }
      this.#take(next)
      this.#start(now)
      started.push(next)
    }
    return { started, wakeAt: undefined }
  }

  /**
   * Earliest time the budget allows another start (ignoring the concurrency cap), rounded up to a
   * whole millisecond: clocks tick in integers, and fractional sums would let a start land a hair
   * inside the window.
   */
  nextStartAt(): number {
    const effective = this.#budget.effective
    const spacing = (this.#window.windowMs + this.#marginMs) / effective
    const paced = this.#tat - spacing * (this.#burst - 1)
    const windowed = this.#window.nextFreeAt(effective) + this.#marginMs
    return Math.ceil(Math.max(this.#pausedUntil, this.#deferredUntil, paced, windowed))
  }

  finish(): void {
    if (this.#inFlight > 0) this.#inFlight--
  }

  pause(untilMs: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, untilMs)
  }

  /** Holds every start until `untilMs`: the window shared with other processes is full until then. */
  defer(untilMs: number): void {
    this.#deferredUntil = Math.max(this.#deferredUntil, untilMs)
  }

  /**
   * Feeds an answer's rate-limit headers to the adaptive limit. `sharedStarts`: the starts every
   * process on this mirror made in the window (the shared window's count), when known; they are
   * all "ours", so only clients outside the mirror lower the limit. Without it, this core's own.
   */
  observe(o: RateObservation, sharedStarts?: number): BudgetChange | undefined {
    const ourStarts = sharedStarts ?? this.#window.countSince(o.startedAt - this.#window.windowMs)
    return this.#budget.observe({ at: o.at, status: o.status, ourStarts, limitHeader: o.limitHeader, remainingHeader: o.remainingHeader })
  }

  state(now: number): GovernorState {
    this.#see(now)
    this.#budget.recover(now)
    const queued = Object.fromEntries(PRIORITIES.map((p, i) => [p, this.#counts[i] ?? 0])) as Record<Priority, number>
    return {
      limit: this.limit,
      effectiveLimit: this.#budget.effective,
      sentLastMinute: this.#window.countInWindow(now),
      inFlight: this.#inFlight,
      queued,
      pausedUntil: this.#pausedUntil > now ? this.#pausedUntil : null,
    }
  }

  /** Effective level after aging: one level up per `agingMs` waited, never above 0. */
  effectiveLevel(ticket: Ticket, now: number): number {
    if (!(this.#agingMs > 0) || !Number.isFinite(this.#agingMs)) return ticket.level
    return Math.max(0, ticket.level - Math.floor((now - ticket.enqueuedAt) / this.#agingMs))
  }

  /**
   * A clock that stepped back (NTP, a VM restored) leaves the pacing time and recorded starts in
   * the future: kept there, they would hold every start for as long as the step (an hour's step,
   * an hour). Starts after `now` count as made now, and the pacing time, the pause and the deferral
   * keep only what they were ahead of the clock before the step.
   */
  #see(now: number): void {
    const step = this.#steps.see(now)
    if (step > 0) {
      this.#window.pullBackTo(now)
      this.#tat = pullBack(this.#tat, now, step)
      this.#pausedUntil = pullBack(this.#pausedUntil, now, step)
      this.#deferredUntil = pullBack(this.#deferredUntil, now, step)
    }
  }

  #start(now: number): void {
    const spacing = (this.#window.windowMs + this.#marginMs) / this.#budget.effective
    this.#tat = Math.max(this.#tat, now) + spacing
    this.#window.record(now)
    this.#inFlight++
    this.#onStart?.(now)
  }

  // Each queue is FIFO, so its head is both its oldest and its best-aged ticket: compare heads.
  #pick(now: number): Ticket | undefined {
    let best: Ticket | undefined
    let bestLevel = Number.POSITIVE_INFINITY
    for (let level = 0; level < PRIORITIES.length; level++) {
      const head = this.#head(level)
      if (head === undefined) continue
      const eff = this.effectiveLevel(head, now)
      if (eff < bestLevel || (eff === bestLevel && best !== undefined && head.enqueuedAt < best.enqueuedAt)) {
        best = head
        bestLevel = eff
      }
    }
    return best
  }

  #head(level: number): Ticket | undefined {
    const queue = this.#queues[level] ?? []
    let h = this.#heads[level] ?? 0
    while (h < queue.length && queue[h]?.status !== 'queued') h++
    if (h > 1024 && h * 2 > queue.length) {
      queue.splice(0, h)
      h = 0
    }
    this.#heads[level] = h
    return queue[h]
  }

  #take(ticket: Ticket): void {
    ticket.status = 'started'
    this.#counts[ticket.level] = (this.#counts[ticket.level] ?? 1) - 1
  }
}
