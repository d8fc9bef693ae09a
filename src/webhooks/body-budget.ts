// How many body bytes the intake holds in memory at once, across every request. A signature covers
// the body, so an unsigned client cannot be told apart from the real sender before its body is read:
// what bounds memory is this budget, with the connection cap and the body deadline. A request that
// would pass it is answered 503 at once, before its bytes are read.
//
// Small bodies (the real sender's deliveries are a few KB) may use the whole budget; larger ones
// only LARGE_BODY_SHARE of it. Without that headroom, clients announcing bodies near the cap could
// fill the budget to the last few bytes and every real delivery would then be refused.

/** Bodies up to this size may use the whole budget. */
export const SMALL_BODY_BYTES = 64 * 1024
/** The share of the budget bodies over SMALL_BODY_BYTES may hold together. */
export const LARGE_BODY_SHARE = 0.75

export class BodyBudget {
  #used = 0
  readonly #largeCeiling: number

  constructor(readonly limit: number) {
    this.#largeCeiling = Math.floor(limit * LARGE_BODY_SHARE)
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used
  }

  /**
   * Takes `bytes` more for a body that will then be `bodyBytes` long (its Content-Length, or what
   * it has grown to); false, taking nothing, when that would pass what such a body may use.
   */
  take(bytes: number, bodyBytes: number): boolean {
    const ceiling = bodyBytes > SMALL_BODY_BYTES ? this.#largeCeiling : this.limit
    if (this.#used + bytes > ceiling) return false
    this.#used += bytes
    return true
  }

  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes)
  }
}
