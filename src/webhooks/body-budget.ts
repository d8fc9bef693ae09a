// How many body bytes the intake holds in memory at once, across every request. A signature covers
// the body, so an unsigned client cannot be told apart from the real sender before its body is read:
// what bounds memory is this budget, with the connection cap and the body deadline.
//
// Bytes are charged as they arrive, never on what a Content-Length announces: otherwise clients
// sending only headers (a large Content-Length, then nothing) would fill the budget for free and
// every real delivery would get 503. The chunk that would pass the ceiling is refused (503) and the
// rest of that body is never read.
//
// Two ceilings keep the real sender's deliveries (a few KB, usually in one read) fitting while
// others trickle: bytes of bodies still incomplete, and any bytes of bodies over SMALL_BODY_BYTES,
// may fill only HELD_SHARE of the budget; the chunk that completes a small body may use the rest.
// In the daemon the budget is the process's, and each account draws on it through its own share
// (accountBodyBudget), with the same two ceilings inside that share.

import { HELD_SHARE } from '../config/intake-defaults.js'

export { HELD_SHARE }

/** Bodies up to this size may complete in the whole budget. */
export const SMALL_BODY_BYTES = 64 * 1024
export interface BodyChunk {
  /** What the body will be at least: its Content-Length, or what it has grown to. */
  bodyBytes: number
  /** Whether this chunk ends the body (its last byte by Content-Length). */
  completes: boolean
}

export class BodyBudget {
  #used = 0
  readonly #limit: number | (() => number)
  readonly #parent: BodyBudget | undefined

  /**
   * `limit` may be read at each take (an account's share, which depends on how many accounts run);
   * with a `parent`, every byte is charged to both, and a take passes only if both have room.
   */
  constructor(limit: number | (() => number), parent?: BodyBudget) {
    this.#limit = limit
    this.#parent = parent
  }

  get limit(): number {
    return typeof this.#limit === 'number' ? this.#limit : this.#limit()
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used
  }

  /** Takes `bytes` more for one chunk of a body; false, taking nothing, when that would pass a ceiling (its own or its parent's). */
  take(bytes: number, chunk: BodyChunk): boolean {
    const limit = this.limit
    const ceiling = chunk.completes && chunk.bodyBytes <= SMALL_BODY_BYTES ? limit : Math.floor(limit * HELD_SHARE)
    if (this.#used + bytes > ceiling) return false
    if (this.#parent !== undefined && !this.#parent.take(bytes, chunk)) return false
    this.#used += bytes
    return true
  }

  give(bytes: number): void {
    const given = Math.min(bytes, this.#used)
    this.#used -= given
    this.#parent?.give(given)
  }
}

/**
 * The share of the process's budget one account may hold while others run: a flood of bodies on
 * one account's path leaves the other half to the rest. Alone, an account has all of it.
 */
export const ACCOUNT_SHARE = 0.5

/** One account's part of the process's body budget (`accounts`: how many run now). */
export function accountBodyBudget(process: BodyBudget, accounts: () => number): BodyBudget {
  return new BodyBudget(() => (accounts() > 1 ? Math.floor(process.limit * ACCOUNT_SHARE) : process.limit), process)
}
