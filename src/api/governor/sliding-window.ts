// The record of recent request starts, and the one question the governor asks of it: when may the
// next start happen so that no window of `windowMs` holds more than `limit` starts? (spec, Limits:
// "60 requests per minute per key, sliding window".)

export class SlidingWindow {
  readonly #capacity: number
  readonly #windowMs: number
  // Ring buffer of the last `capacity` start times, oldest at `#head`.
  readonly #starts: number[]
  #head = 0
  #size = 0

  /** `capacity` is the largest limit ever asked about (the configured limit). */
  constructor(capacity: number, windowMs: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`)
    this.#capacity = capacity
    this.#windowMs = windowMs
    this.#starts = new Array<number>(capacity).fill(0)
  }

  get windowMs(): number {
    return this.#windowMs
  }

  record(at: number): void {
    const index = (this.#head + this.#size) % this.#capacity
    this.#starts[index] = at
    if (this.#size < this.#capacity) this.#size++
    else this.#head = (this.#head + 1) % this.#capacity
  }

  /**
   * Earliest time a new start keeps every window of `windowMs` at or under `limit` starts: the
   * `limit`-th most recent start plus the window. `-Infinity` when fewer than `limit` are recorded.
   */
  nextFreeAt(limit: number): number {
    const n = Math.min(Math.max(1, Math.floor(limit)), this.#capacity)
    if (this.#size < n) return Number.NEGATIVE_INFINITY
    return this.#at(this.#size - n) + this.#windowMs
  }

  /**
   * Moves every start recorded after `now` back to `now` (the wall clock stepped back): each still
   * counts, as made now, instead of holding the window until the clock catches up.
   */
  pullBackTo(now: number): void {
    // Sorted oldest first, so the later ones are at the end; they stay sorted once moved.
    for (let i = this.#size - 1; i >= 0 && this.#at(i) > now; i--) this.#starts[(this.#head + i) % this.#capacity] = now
  }

  /** Starts in the window that ends at `now` (the last `windowMs`, `now` included). */
  countSince(from: number): number {
    // Starts are recorded in time order, so a binary search finds the first one after `from`.
    let lo = 0
    let hi = this.#size
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.#at(mid) > from) hi = mid
      else lo = mid + 1
    }
    return this.#size - lo
  }

  countInWindow(now: number): number {
    return this.countSince(now - this.#windowMs)
  }

  #at(i: number): number {
    return this.#starts[(this.#head + i) % this.#capacity] ?? 0
  }
}
