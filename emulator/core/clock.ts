// The emulator's clock: an injectable base clock plus a control surface (POST /__emulator/clock)
// to freeze time (so many writes share one updatedAt) and to advance it (rate-limit windows, key
// expiry) without sleeping.

export class EmulatorClock {
  private offsetMs = 0
  private frozenAt: number | null = null

  constructor(private readonly base: () => number) {}

  now(): number {
    return this.frozenAt ?? this.base() + this.offsetMs
  }

  freeze(atMs: number): void {
    this.frozenAt = atMs
  }

  /**
   * Unfreezing never moves time backwards: after a freeze at a future instant the clock goes on
   * from there, so later writes never carry an updatedAt older than the frozen ones.
   */
  unfreeze(): void {
    if (this.frozenAt === null) return
    this.offsetMs = Math.max(this.offsetMs, this.frozenAt - this.base())
    this.frozenAt = null
  }

  advance(ms: number): void {
    if (this.frozenAt !== null) this.frozenAt += ms
    else this.offsetMs += ms
  }

  describe(): { now: string; frozen: boolean; offsetMs: number } {
    return { now: new Date(this.now()).toISOString(), frozen: this.frozenAt !== null, offsetMs: this.offsetMs }
  }
}
