// The error a fenced writer meets: the account's lease is no longer this holder's. The caller rolls
// its transaction back, stops the account's runtime and leaves the account to its new owner.

export interface LeaseHolder {
  owner: string
  epoch: number
}

export class LeaseLost extends Error {
  readonly code = 'LEASE_LOST' as const
  readonly accountId: string
  readonly expected: LeaseHolder
  /** What the lease row holds now: another owner or epoch, an expired lease, or no row at all. */
  readonly found: { owner: string | null; epoch: number; expired: boolean } | undefined

  constructor(accountId: string, expected: LeaseHolder, found: LeaseLost['found']) {
    const now =
      found === undefined
        ? 'no lease exists'
        : found.owner !== expected.owner || found.epoch !== expected.epoch
          ? `the lease is now ${found.owner ?? 'free'} at epoch ${found.epoch}`
          : 'the lease has expired'
    super(`account ${accountId}: lease of ${expected.owner} at epoch ${expected.epoch} lost (${now}); its work stops here`)
    this.name = 'LeaseLost'
    this.accountId = accountId
    this.expected = expected
    this.found = found
  }
}
