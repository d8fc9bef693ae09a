// The one-line description of a failure stored in sync_state / sync_runs and printed by commands.
// Upstream errors already say route, status, code and what to do (docs/guarantees.md, Clear
// errors).
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message
  return typeof err === 'string' ? err : JSON.stringify(err)
}

/** The `code` our typed errors carry (API_UNAUTHORIZED, NETWORK_ERROR, ...), when `err` has one. */
export function errorCodeOf(err: unknown): string | undefined {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined
  return typeof code === 'string' && code !== '' ? code : undefined
}
