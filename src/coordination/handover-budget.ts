// The new owner's view of the old owner's last minute, as start times on its own clock for the
// governor's `priorStarts`. Recorded starts keep their age; the tail since the last record (the old
// owner may have kept starting requests until its lease ended locally) is filled with the most
// starts its governor could have made there, placed at the latest instant: now. Pure.
import type { PriorStarts } from './request-starts.js'

export interface HandoverBudgetOptions {
  limitPerMinute: number
  windowMs?: number
  /** Starts a governor allows back to back (the governor's burst, 2 by default). */
  burst?: number
}

/** Start times on the caller's clock (`now` is its current time), oldest first, for `priorStarts`. */
export function seedStarts(now: number, prior: PriorStarts | undefined, options: HandoverBudgetOptions): number[] {
  if (prior === undefined) return []
  const windowMs = options.windowMs ?? 60_000
  const recorded = prior.agesMs.filter((age) => age < windowMs).map((age) => now - age)
  recorded.sort((a, b) => a - b)
  if (prior.final || prior.sinceRecordMs <= 0) return recorded
  const room = Math.max(0, options.limitPerMinute - recorded.length)
  const paced = Math.ceil((Math.min(prior.sinceRecordMs, windowMs) * options.limitPerMinute) / windowMs) + (options.burst ?? 2)
  return [...recorded, ...Array.from({ length: Math.min(room, paced) }, () => now)]
}
