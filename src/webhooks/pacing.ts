// The webhook processor's pacing (processor.ts) as pure functions of what it measured, so each rule
// is tested with plain numbers. The durations are the event loop's own (performance.now and its
// utilization): pacing shares the loop with the intake's sockets, which fake time cannot stand in
// for. Waits the product decides on (the back-off after a mirror failure) run on the Clock.

/** Time the processor may hold the event loop per slice (ms) by default. */
export const DEFAULT_SLICE_MS = 2
/** Slice budget (ms) while deliveries arrive: the longest an ack's callback waits behind applying. */
export const BUSY_SLICE_MS = 0.5
/** Wait between a wake and the slice it starts (ms) by default: a few group commits go in one slice. */
export const DEFAULT_GATHER_MS = 5
/**
 * Most snapshots applied in one upsert call. The slice's time budget is checked between calls, so
 * this bounds how far a slice can run past it (about 60 µs a row: 1.5 ms), while keeping most of
 * the saving of one call for many rows.
 */
export const MAX_RUN = 25
/** The same while deliveries arrive, for slices of BUSY_SLICE_MS (about 0.4 ms a run). */
export const BUSY_MAX_RUN = 6
/** Bounds of the rest between busy slices, as multiples of the slice: 2/3 of the loop down to 1/17. */
export const MIN_REST_FACTOR = 0.5
export const MAX_REST_FACTOR = 16
/** Longest rest (ms), however long a slice took (a thread descheduled mid-slice). */
export const MAX_REST_MS = 100
/** First wait (ms) after the mirror itself failed, doubled at each failure up to the longest. */
export const DEFAULT_STORE_RETRY_MS = 1_000
export const DEFAULT_STORE_RETRY_MAX_MS = 60_000

export interface PaceInput {
  /** The inbox's group commits now, and when the previous slice ended: more means deliveries arrive. */
  commits: number
  commitsSeen: number
  /** The backlog is past half of its bound (the inbox's `filling`). */
  filling: boolean
  /** How long the slice that just ended held the loop (ms). */
  spentMs: number
  /** Rest per millisecond of slice, as adapted so far (see nextRestFactor). */
  restFactor: number
}

/** After a slice: go on at the next turn (not busy), or rest `restMs` first (deliveries arrive). */
export type Pace = { busy: false } | { busy: true; restMs: number }

/**
 * With no group committed since the last slice, or with the backlog past half its bound (applying
 * comes first: yielding further would end in 503s), the next slice follows at the next turn.
 * Otherwise the processor rests `restFactor` times as long as the slice took, 1 ms to MAX_REST_MS.
 */
export function nextPace(p: PaceInput): Pace {
  if (p.commits === p.commitsSeen || p.filling) return { busy: false }
  return { busy: true, restMs: Math.min(MAX_REST_MS, Math.max(1, p.spentMs * p.restFactor)) }
}

/** After a rest: if the loop was more than half busy meanwhile (the intake used it), rest twice as long, else half. */
export function nextRestFactor(restFactor: number, loopUtilization: number): number {
  return loopUtilization > 0.5 ? Math.min(MAX_REST_FACTOR, restFactor * 2) : Math.max(MIN_REST_FACTOR, restFactor / 2)
}

/** The time a slice may hold the loop: at most BUSY_SLICE_MS while deliveries arrive. */
export function sliceBudget(busy: boolean, sliceMs: number = DEFAULT_SLICE_MS): number {
  return busy ? Math.min(BUSY_SLICE_MS, sliceMs) : sliceMs
}

/** Snapshots applied in one upsert call. */
export function maxRun(busy: boolean): number {
  return busy ? BUSY_MAX_RUN : MAX_RUN
}

/** Wait between a wake and its slice: none once the backlog nears its bound. */
export function wakeDelay(filling: boolean, gatherMs: number = DEFAULT_GATHER_MS): number {
  return filling ? 0 : gatherMs
}

/** Wait before the next try after `attempts` mirror failures in a row: doubling from `firstMs` up to `maxMs`. */
export function retryDelay(attempts: number, firstMs: number = DEFAULT_STORE_RETRY_MS, maxMs: number = DEFAULT_STORE_RETRY_MAX_MS): number {
  return Math.min(maxMs, firstMs * 2 ** (attempts - 1))
}
