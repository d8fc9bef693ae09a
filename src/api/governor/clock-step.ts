// A wall clock that stepped back (NTP, a VM restored) leaves pacing times and recorded starts in
// the future: kept there, they would hold every start for as long as the step (an hour's step, an
// hour). The governor's core and the budget shares (budget-share.ts) watch for the step the same
// way: starts after `now` count as made now, and a time ahead of the clock keeps only what it was
// ahead of the clock before the step.

/** Notices the clock stepping back between two looks. */
export class ClockStepWatch {
  /** The latest `now` seen: a smaller one means the clock stepped back. */
  #lastNow = Number.NEGATIVE_INFINITY

  /** How far the clock stepped back since the last look (0 when it did not); `now` becomes the latest seen. */
  see(now: number): number {
    const step = Math.max(0, this.#lastNow - now)
    this.#lastNow = now
    return step
  }
}

/** `t` after the clock stepped back by `step` to `now`: a time ahead of `now` keeps only what it was ahead before the step. */
export function pullBack(t: number, now: number, step: number): number {
  return t > now ? Math.max(now, t - step) : t
}
