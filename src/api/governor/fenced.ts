// The error a request meets when this replica no longer owns the account (docs/sharding.md,
// Fencing): the governor's permit said no just before the start, so nothing was sent. Not an
// upstream fault and not worth a retry: the run stops, as on a stop signal, and the new owner goes on.

export class FencedError extends Error {
  readonly code = 'FENCED' as const

  constructor(message = 'this replica no longer owns the account: request not sent') {
    super(message)
    this.name = 'FencedError'
  }
}

/** Whether `err` is a FencedError (by its code, so a copy from another module instance counts too). */
export function isFenced(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'FENCED'
}
