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
  readonly #heldCeiling: number

  constructor(readonly limit: number) {
    this.#heldCeiling = Math.floor(limit * HELD_SHARE)
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used
  }

  /** Takes `bytes` more for one chunk of a body; false, taking nothing, when that would pass its ceiling. */
  take(bytes: number, chunk: BodyChunk): boolean {
    const ceiling = chunk.completes && chunk.bodyBytes <= SMALL_BODY_BYTES ? this.limit : this.#heldCeiling
    if (this.#used + bytes > ceiling) return false
    this.#used += bytes
    return true
  }

  give(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes)
  }
}
