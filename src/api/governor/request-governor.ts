// The request governor: one per API key, shared by every caller. Callers wait for a start slot;
// the pure GovernorCore decides who starts and when, this shell turns its answers into timers
// and resolved promises. Every attempt of every request, retries included, takes a slot.
// With a shared window (the mirror's request_starts), each start is also claimed there, so that
// every process on the key together stays within the limit: the daemon beside a cron `reconcile`.
// The README.md beside this file says what each file of the folder does, what the governor
// guarantees, and why it is not built on p-queue (no window carried across a restart, no run-time
// change of the cap, no aging, a burst of the whole budget in strict mode, Node 22).
import { abortReason, systemClock, type Clock } from '../../model/clock.js'
import { GovernorCore, type GovernorOptions, type GovernorState, type Priority, type RateObservation, type Ticket } from './core.js'
import type { BudgetChange } from './adaptive-limit.js'
import { FencedError } from './fenced.js'

export interface Slot {
  /** When the start was granted (clock ms). */
  readonly startedAt: number
  /** Frees the concurrency place; call once the response body has been read. Idempotent. */
  release(): void
}

/** A request waiting for a start slot: what it is for (when its caller said), its priority, since when (clock ms). */
export interface BudgetWait {
  who: string | undefined
  priority: Priority
  since: number
}

interface Waiter {
  who: string | undefined
  ticket: Ticket
  resolve: (slot: Slot) => void
  reject: (err: Error) => void
  signal: AbortSignal | undefined
  onAbort: () => void
}

/** The window every process on the key shares. */
export interface SharedWindow {
  /**
   * In one short write transaction (never across an await): counts every process's starts in the
   * last `windowMs`; below `limit`, records a start now and grants it; otherwise says when the
   * oldest start that stands in the way leaves the window. Must not throw.
   */
  claim(limit: number, windowMs: number): { granted: true } | { granted: false; retryAt: number }
  /**
   * Starts of every process on the key after `from` (this one's included), or undefined when it
   * cannot tell. Must not throw. Without it, the adaptive limit counts this process's starts only
   * and takes a sibling process for a foreign client.
   */
  startsSince?(from: number): number | undefined
}

export interface RequestGovernorOptions extends GovernorOptions {
  clock?: Clock
  /** Claimed at each start on top of the in-process budget, which still orders and paces. */
  shared?: SharedWindow
  /** Told whenever the adaptive budget moves (for a log line). */
  onBudgetChange?: (change: BudgetChange) => void
  /**
   * Asked immediately before each start is granted (after every wait for the budget): false when
   * this replica no longer owns the account. Then nothing starts, no start is recorded, and every
   * waiting request fails with FencedError (docs/sharding.md, Wiring). Without it, always yes.
   */
  permit?: () => boolean
}

export class RequestGovernor {
  readonly #core: GovernorCore
  readonly #clock: Clock
  readonly #waiters = new Map<number, Waiter>()
  readonly #onBudgetChange: ((change: BudgetChange) => void) | undefined
  readonly #shared: SharedWindow | undefined
  readonly #permit: () => boolean
  #timerAt: number | undefined
  #cancelTimer: (() => void) | undefined

  constructor(options: RequestGovernorOptions) {
    this.#clock = options.clock ?? systemClock
    this.#core = new GovernorCore({ priorStartsBefore: this.#clock.now(), ...options })
    this.#onBudgetChange = options.onBudgetChange
    this.#shared = options.shared
    this.#permit = options.permit ?? (() => true)
  }

  get limit(): number {
    return this.#core.limit
  }

  /** The span in which at most the effective limit of starts may fall (the window plus its margin). */
  get guardedWindowMs(): number {
    return this.#core.guardedWindowMs
  }

  /**
   * Waits for a start slot. Aborting while queued removes the request and rejects. `who`: what the
   * request is for (a run's kind and stream), shown while it waits (`waiting`).
   */
  acquire(priority: Priority, signal?: AbortSignal, who?: string): Promise<Slot> {
    if (signal?.aborted === true) return Promise.reject(abortReason(signal))
    if (!this.#permit()) return Promise.reject(new FencedError())
    return new Promise<Slot>((resolve, reject) => {
      const ticket = this.#core.enqueue(priority, this.#clock.now())
      const waiter: Waiter = {
        who,
        ticket,
        resolve,
        reject,
        signal,
        onAbort: () => {
          if (this.#core.cancel(ticket)) {
            this.#waiters.delete(ticket.id)
            reject(abortReason(signal))
            this.#pump()
          }
        },
      }
      this.#waiters.set(ticket.id, waiter)
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      this.#pump()
    })
  }

  /** Runs `fn` in a slot and releases it when `fn` settles. */
  async schedule<T>(priority: Priority, fn: (slot: Slot) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const slot = await this.acquire(priority, signal)
    try {
      return await fn(slot)
    } finally {
      slot.release()
    }
  }

  /** Stops every start until `untilMs` (a 429's Retry-After / X-RateLimit-Reset). */
  pause(untilMs: number): void {
    this.#core.pause(untilMs)
    this.#pump()
  }

  /** Feeds the rate-limit headers of an answer to the adaptive budget. */
  observe(o: RateObservation): BudgetChange | undefined {
    const change = this.#core.observe(o, this.#shared?.startsSince?.(o.startedAt - this.#core.windowMs))
    if (change !== undefined) this.#onBudgetChange?.(change)
    this.#pump()
    return change
  }

  /** The requests waiting for a start slot now, the longest waiting first. */
  waiting(): BudgetWait[] {
    return [...this.#waiters.values()]
      .map((w) => ({ who: w.who, priority: w.ticket.priority, since: w.ticket.enqueuedAt }))
      .sort((a, b) => a.since - b.since)
  }

  state(): GovernorState {
    return this.#core.state(this.#clock.now())
  }

  #pump(): void {
    const now = this.#clock.now()
    if (this.#shared === undefined) {
      if (this.#fenced(now)) return
      const { started, wakeAt } = this.#core.poll(now)
      for (const ticket of started) this.#grant(ticket, now)
      this.#arm(wakeAt)
      return
    }
    // One start at a time, each claimed in the shared window first.
    for (;;) {
      const at = this.#core.readyAt(now)
      if (at === undefined || at > now) {
        this.#arm(at)
        return
      }
      if (this.#fenced(now)) return
      const claim = this.#shared.claim(this.#core.effectiveLimit, this.#core.guardedWindowMs)
      if (!claim.granted) {
        this.#core.defer(Math.max(claim.retryAt, now + 1))
        continue
      }
      const { started } = this.#core.poll(now, 1)
      if (started.length === 0) {
        // Cannot happen (readyAt said now); never spin on it.
        this.#arm(this.#core.readyAt(now + 1))
        return
      }
      for (const ticket of started) this.#grant(ticket, now)
    }
  }

  /**
   * The permit's check, just before starts would be granted at `now` (only when one may start: a
   * request still waiting for the budget is asked again when its turn comes). When refused, every
   * waiting request fails with FencedError and is removed; nothing is started or recorded.
   */
  #fenced(now: number): boolean {
    if (this.#waiters.size === 0) return false
    const at = this.#core.readyAt(now)
    if (at === undefined || at > now || this.#permit()) return false
    for (const [id, waiter] of this.#waiters) {
      this.#waiters.delete(id)
      this.#core.cancel(waiter.ticket)
      waiter.signal?.removeEventListener('abort', waiter.onAbort)
      waiter.reject(new FencedError())
    }
    this.#arm(undefined)
    return true
  }

  #grant(ticket: Ticket, now: number): void {
    const waiter = this.#waiters.get(ticket.id)
    if (waiter === undefined) return
    this.#waiters.delete(ticket.id)
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
    waiter.resolve(this.#slot(now))
  }

  #slot(startedAt: number): Slot {
    let released = false
    return {
      startedAt,
      release: () => {
        if (released) return
        released = true
        this.#core.finish()
        this.#pump()
      },
    }
  }

  // One timer at a time, for the earliest moment the core said it could start something.
  #arm(wakeAt: number | undefined): void {
    if (wakeAt === this.#timerAt) return
    this.#cancelTimer?.()
    this.#cancelTimer = undefined
    this.#timerAt = wakeAt
    if (wakeAt === undefined) return
    this.#cancelTimer = this.#clock.setTimer(Math.max(0, Math.ceil(wakeAt - this.#clock.now())), () => {
      this.#timerAt = undefined
      this.#cancelTimer = undefined
      this.#pump()
    })
  }
}
