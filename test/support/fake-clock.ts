// A clock that moves only when told to. Timers fire in time order (ties in creation order), and the
// async `advance` lets promise continuations run between timers, as they would in real time. Tests,
// bench/ and soak/ pass it wherever src/ takes a Clock (src/model/clock.ts).
import { sleepWith, type Clock } from '../../src/model/clock.js'

interface Timer {
  at: number
  seq: number
  fn: () => void
}

export class FakeClock implements Clock {
  #now: number
  #seq = 0
  #timers: Timer[] = []

  constructor(startMs = Date.UTC(2025, 0, 1)) {
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn }
    this.#timers.push(timer)
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer)
    }
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal)
  }

  /** Number of timers waiting to fire. */
  get pending(): number {
    return this.#timers.length
  }

  /** Moves time forward by `ms`, firing due timers in order and flushing microtasks after each. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms
    await flush()
    for (;;) {
      const next = this.#earliest()
      if (next === undefined || next.at > target) break
      this.#timers = this.#timers.filter((t) => t !== next)
      this.#now = Math.max(this.#now, next.at)
      next.fn()
      await flush()
    }
    this.#now = target
    await flush()
  }

  /**
   * The wall clock jumps by `ms` (back when negative: NTP, a VM restored; forward: a host that woke
   * from a suspend) while timers keep the time they had left, as Node's monotonic timers do. Fires
   * nothing: the next `advance` does.
   */
  jump(ms: number): void {
    this.#now += ms
    for (const t of this.#timers) t.at += ms
  }

  /** Moves to the earliest timer and fires it (and any due with it); false when none is waiting. */
  async advanceToNext(): Promise<boolean> {
    const next = this.#earliest()
    if (next === undefined) return false
    await this.advance(Math.max(0, next.at - this.#now))
    return true
  }

  /** Fires timers until none is left (or `maxMs` of fake time has passed). */
  async runAll(maxMs = 24 * 3_600_000): Promise<void> {
    const limit = this.#now + maxMs
    await flush()
    for (;;) {
      const next = this.#earliest()
      if (next === undefined || next.at > limit) return
      await this.advance(next.at - this.#now)
    }
  }

  #earliest(): Timer | undefined {
    let best: Timer | undefined
    for (const t of this.#timers) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t
    }
    return best
  }
}

/** One macrotask turn: every pending promise continuation runs before it ends. */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
