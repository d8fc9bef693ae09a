// A share of the governor's budget for one kind of work: the daemon's continuous sweeps may spend
// `fraction` of the effective limit and no more, so that webhook follow-ups, triggers,
// reconciliation and commands run beside the daemon always find the rest (docs/sweeping.md, Continuous
// sweeping). The share follows the adaptive limit: when another client spends the key and the
// governor lowers its budget, the share shrinks with it, so sweeping slows instead of overrunning.
//
// Requests of the share wait here first (their own sliding window and pacing, at the share's
// limit), then in the governor like every other request. One request of the share waits in the
// governor at a time, and its start is recorded when the governor grants it: so no window of the
// governor's guarded span ever holds more starts of the share than its limit at the time of the check.
import type { Clock } from '../../model/clock.js'
import { ClockStepWatch, pullBack } from './clock-step.js'
import type { Priority } from './core.js'
import type { BudgetWait, RequestGovernor, Slot } from './request-governor.js'
import { SlidingWindow } from './sliding-window.js'

export interface BudgetShareOptions {
  /** Share of the governor's effective limit, in (0, 1]. */
  fraction: number
  clock: Clock
  /** Starts allowed back to back after an idle spell. Default 2, as the governor's. */
  burst?: number
}

export class BudgetShare {
  readonly fraction: number
  readonly #governor: RequestGovernor
  readonly #clock: Clock
  readonly #window: SlidingWindow
  readonly #burst: number
  #tat = Number.NEGATIVE_INFINITY
  /** Notices the clock stepping back, as the governor's core does (clock-step.ts). */
  readonly #steps = new ClockStepWatch()
  #tail: Promise<unknown> = Promise.resolve()
  /** Requests waiting for the share's turn (not yet in the governor, which lists its own). */
  readonly #waiting = new Set<BudgetWait>()

  constructor(governor: RequestGovernor, options: BudgetShareOptions) {
    if (!(options.fraction > 0 && options.fraction <= 1)) throw new RangeError(`a budget share must be in (0, 1], got ${options.fraction}`)
    this.fraction = options.fraction
    this.#governor = governor
    this.#clock = options.clock
    this.#window = new SlidingWindow(governor.limit, governor.guardedWindowMs)
    this.#burst = Math.max(1, options.burst ?? 2)
  }

  /** Starts per window the share allows now: its fraction of the governor's effective limit, at least 1. */
  get limit(): number {
    return Math.max(1, Math.floor(this.fraction * this.#governor.state().effectiveLimit))
  }

  /** Starts of the share in the guarded window that ends at `now`. */
  startsInWindow(now: number = this.#clock.now()): number {
    this.#see(now)
    return this.#window.countInWindow(now)
  }

  /** When the share's pacing and window allow its next start (no start is taken): a caller may wait for it elsewhere first. */
  readyAt(now: number = this.#clock.now()): number {
    this.#see(now)
    return this.#nextStartAt()
  }

  /** Waits for the share's turn, then for a slot of the governor. Same contract as `RequestGovernor.acquire`. */
  acquire(priority: Priority, signal?: AbortSignal, who?: string): Promise<Slot> {
    const wait: BudgetWait = { who, priority, since: this.#clock.now() }
    this.#waiting.add(wait)
    const turn = this.#tail.then(() => this.#acquireInTurn(priority, signal, wait))
    this.#tail = turn.catch(() => undefined)
    return turn.finally(() => this.#waiting.delete(wait))
  }

  /** The requests waiting for the share's turn now (those already waiting in the governor are its), the longest first. */
  waiting(): BudgetWait[] {
    return [...this.#waiting].sort((a, b) => a.since - b.since)
  }

  async #acquireInTurn(priority: Priority, signal: AbortSignal | undefined, wait: BudgetWait): Promise<Slot> {
    for (;;) {
      const now = this.#clock.now()
      this.#see(now)
      const at = this.#nextStartAt()
      if (at <= now) break
      await this.#clock.sleep(at - now, signal)
    }
    this.#waiting.delete(wait)
    const slot = await this.#governor.acquire(priority, signal, wait.who)
    this.#see(this.#clock.now())
    this.#window.record(Math.min(slot.startedAt, this.#clock.now()))
    this.#tat = Math.max(this.#tat, slot.startedAt) + this.#window.windowMs / this.limit
    return slot
  }

  /** A clock that stepped back: the share's starts and pacing time come back with it (clock-step.ts). */
  #see(now: number): void {
    const step = this.#steps.see(now)
    if (step > 0) {
      this.#window.pullBackTo(now)
      this.#tat = pullBack(this.#tat, now, step)
    }
  }

  // GCRA pacing at the share's rate (one start per window/limit, a burst of `burst`) and the hard
  // window: the earliest time both allow another start.
  #nextStartAt(): number {
    const limit = this.limit
    const spacing = this.#window.windowMs / limit
    return Math.ceil(Math.max(this.#tat - spacing * (this.#burst - 1), this.#window.nextFreeAt(limit)))
  }
}
