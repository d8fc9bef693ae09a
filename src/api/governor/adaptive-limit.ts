// The budget we allow ourselves, below the configured one when the upstream shows that another
// client spends the same key (docs/sweeping.md, The request budget).
// Cut at once on evidence, recover by small steps: a multiplicative-decrease, additive-increase loop
// that never goes above the configured limit or the limit the server announces.

export interface AdaptiveLimitOptions {
  /** The configured requests per window; never exceeded. */
  limit: number
  /** Floor of the effective limit. Default 1. */
  minLimit?: number
  /** Added back per recovery step. Default 10% of the limit (at least 1). */
  recoverStep?: number
  /** Quiet time (no new evidence) between recovery steps. Default 60 s. */
  recoverEveryMs?: number
  /** Starts of ours the server may not have seen yet when it answered (requests in flight). */
  slack?: number
}

export interface BudgetObservation {
  /** When the answer arrived. */
  at: number
  status: number
  /** Our own starts in the window that ends at this request's start, this one included. */
  ourStarts: number
  limitHeader?: number | undefined
  remainingHeader?: number | undefined
}

export interface BudgetChange {
  from: number
  to: number
  /** Requests per window that someone else spent, when the headers let us estimate it. */
  foreign?: number
  reason: 'remaining-header' | 'rate-limited' | 'server-limit'
}

export class AdaptiveLimit {
  readonly limit: number
  readonly #min: number
  readonly #step: number
  readonly #every: number
  readonly #slack: number
  #serverLimit = Number.POSITIVE_INFINITY
  #effective: number
  #quietSince = Number.NEGATIVE_INFINITY

  constructor(options: AdaptiveLimitOptions) {
    this.limit = options.limit
    this.#min = Math.min(options.limit, Math.max(1, options.minLimit ?? 1))
    this.#step = Math.max(1, options.recoverStep ?? Math.ceil(options.limit / 10))
    this.#every = options.recoverEveryMs ?? 60_000
    this.#slack = options.slack ?? 0
    this.#effective = options.limit
  }

  get effective(): number {
    return this.#effective
  }

  /** The highest we may go: the configured limit, or the server's own figure when lower. */
  get ceiling(): number {
    return Math.min(this.limit, this.#serverLimit)
  }

  observe(o: BudgetObservation): BudgetChange | undefined {
    const from = this.#effective
    let target = from
    let reason: BudgetChange['reason'] | undefined
    let foreign: number | undefined
    if (o.limitHeader !== undefined && o.limitHeader > 0) {
      this.#serverLimit = o.limitHeader
      if (this.ceiling < target) {
        target = this.ceiling
        reason = 'server-limit'
      }
    }
    const serverLimit = o.limitHeader ?? this.limit
    if (o.remainingHeader !== undefined) {
      // What the server would have left if we were alone on the key; less means someone else.
      const spentByOthers = serverLimit - o.ourStarts - o.remainingHeader
      if (spentByOthers > this.#slack) {
        foreign = spentByOthers
        const fromHeaders = this.ceiling - spentByOthers
        if (fromHeaders < target) {
          target = fromHeaders
          reason = 'remaining-header'
        }
      }
    }
    if (o.status === 429 && reason !== 'remaining-header') {
      // Limited although the headers gave no estimate: if we were well under our budget the rest
      // went to another client, so take what we actually got; otherwise back off by a tenth.
      const ours = o.ourStarts
      const guess = ours + this.#slack < from ? ours : Math.floor(from * 0.9)
      if (guess < target) {
        target = guess
        reason = 'rate-limited'
      }
    }
    if (reason === undefined) return undefined
    this.#quietSince = o.at
    this.#effective = Math.max(this.#min, Math.min(this.ceiling, Math.floor(target)))
    if (this.#effective === from) return undefined
    return { from, to: this.#effective, ...(foreign === undefined ? {} : { foreign }), reason }
  }

  /** Steps back up after each quiet period; returns true when the limit changed. */
  recover(now: number): boolean {
    if (this.#effective >= this.ceiling) return false
    if (this.#quietSince === Number.NEGATIVE_INFINITY) this.#quietSince = now
    if (now - this.#quietSince < this.#every) return false
    const steps = Math.floor((now - this.#quietSince) / this.#every)
    this.#effective = Math.min(this.ceiling, this.#effective + steps * this.#step)
    this.#quietSince += steps * this.#every
    return true
  }
}
