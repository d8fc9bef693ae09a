// The one-line description of a failure stored in sync_state / sync_runs and printed by commands.
// Upstream errors already say route, status, code and what to do (docs/guarantees.md, Clear
// errors).
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message
  return typeof err === 'string' ? err : JSON.stringify(err)
}
