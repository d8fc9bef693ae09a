// How long this replica may act on each account it leases, by its own monotonic clock alone. A
// lease granted or renewed by a request SENT at local time s is valid here until s + ttl - margin:
// the server set its expiry at now() + ttl after receiving the request, so later than s on any clock,
// and the margin covers the clocks' drift over one ttl and the time an action needs to take effect
// (docs/sharding.md, Clocks). Wall clocks are never compared. Pure: times are passed in.
import type { Lease } from './leases.js'

export interface LocalLease {
  epoch: number
  /** Monotonic milliseconds until which this replica may act on the account. */
  validUntil: number
}

export class LocalLeases {
  readonly #held = new Map<string, LocalLease>()
  readonly #ttlMs: number
  readonly #marginMs: number

  constructor(ttlMs: number, marginMs: number) {
    if (!(marginMs > 0 && marginMs < ttlMs))
      throw new RangeError(`the lease margin must lie between 0 and the ttl, got ${marginMs} of ${ttlMs}`)
    this.#ttlMs = ttlMs
    this.#marginMs = marginMs
  }

  /** Records leases just acquired by a request sent at `sentAt`; returns those new to this replica. */
  acquired(sentAt: number, leases: readonly Lease[]): Lease[] {
    const fresh: Lease[] = []
    for (const l of leases) {
      const had = this.#held.get(l.accountId)
      if (had?.epoch !== l.epoch) fresh.push(l)
      this.#held.set(l.accountId, { epoch: l.epoch, validUntil: sentAt + this.#ttlMs - this.#marginMs })
    }
    return fresh
  }

  /**
   * Applies the answer of a renewal sent at `sentAt` (every lease still mine). Returns the accounts
   * lost: held here but missing from the answer, or under another epoch. They are forgotten.
   */
  renewed(sentAt: number, still: readonly Lease[]): string[] {
    const byAccount = new Map(still.map((l) => [l.accountId, l.epoch]))
    const lost: string[] = []
    for (const [account, lease] of this.#held) {
      if (byAccount.get(account) === lease.epoch) lease.validUntil = Math.max(lease.validUntil, sentAt + this.#ttlMs - this.#marginMs)
      else lost.push(account)
    }
    for (const a of lost) this.#held.delete(a)
    return lost.sort()
  }

  /** Forgets accounts (released, or stopped after expiring here). */
  drop(accountIds: Iterable<string>): void {
    for (const a of accountIds) this.#held.delete(a)
  }

  /** The epoch to fence writes with, while the lease is valid at `now`; undefined otherwise. */
  validEpoch(accountId: string, now: number): number | undefined {
    const l = this.#held.get(accountId)
    return l !== undefined && now < l.validUntil ? l.epoch : undefined
  }

  /** Accounts held whose local validity has passed at `now`: their runtimes must stop. */
  expired(now: number): string[] {
    return [...this.#held]
      .filter(([, l]) => now >= l.validUntil)
      .map(([a]) => a)
      .sort()
  }

  /** The earliest local expiry, to arm one timer for all accounts. */
  nextExpiry(): number | undefined {
    let next: number | undefined
    for (const l of this.#held.values()) if (next === undefined || l.validUntil < next) next = l.validUntil
    return next
  }

  accounts(): string[] {
    return [...this.#held.keys()].sort()
  }
}
