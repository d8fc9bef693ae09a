// Seeded timestamps: spread over the six weeks before an anchor. The anchor is the clock's current
// UTC midnight, so the same seed on the same day (or with the same injected clock) gives the same
// data, and every seeded updatedAt is older than any write made afterwards.
import type { Prng } from '../core/prng.js'

export const DAY_MS = 86_400_000
const SPREAD_MS = 42 * DAY_MS

export const anchorOf = (nowMs: number): number => Math.floor(nowMs / DAY_MS) * DAY_MS

/** A created/updated pair in the past weeks, updated at or after created, both before the anchor. */
export function seededTimes(prng: Prng, anchorMs: number): { createdMs: number; updatedMs: number } {
  const createdMs = anchorMs - 60_000 - Math.floor(prng.next() * SPREAD_MS)
  const updatedMs = prng.chance(0.4) ? createdMs : createdMs + Math.floor(prng.next() * (anchorMs - 60_000 - createdMs))
  return { createdMs, updatedMs }
}
