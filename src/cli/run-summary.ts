// Printing of run results, shared by `sync` and `reconcile`.
import type { RunResult } from '../sync/sync-context.js'

/**
 * One line per run. `snapshot`: runs that read reference data whole, shown as "snapshot" instead of
 * rows and requests (its rows changed and the requests of a listing say nothing of how big it is).
 */
export function formatResults<R extends RunResult>(
  results: readonly R[],
  notBuilt: readonly string[],
  options: { snapshot?: (r: R) => boolean } = {},
): string {
  const width = Math.max(10, ...results.map((r) => r.stream.length), ...notBuilt.map((n) => n.length))
  const lines = results.map((r) => {
    const figures =
      options.snapshot?.(r) === true
        ? 'snapshot'.padEnd(28)
        : `rows ${String(r.rows).padStart(7)}  requests ${String(r.requests).padStart(5)}`
    const head = `${r.stream.padEnd(width)} ${r.kind.padEnd(9)} ${r.outcome.padEnd(7)} ${figures}  ${(r.durationMs / 1000).toFixed(1)} s`
    return r.error === undefined ? head : `${head}\n  ${r.error}`
  })
  for (const name of notBuilt) lines.push(`${name.padEnd(width)} skipped: this stream is not built yet (see README.md, Roadmap)`)
  return lines.join('\n') + '\n'
}

/** What `sync --json` and `reconcile --json` print: every run as recorded, and `ok` as the exit code says. */
export function runsDocument(results: readonly RunResult[], notBuilt: readonly string[], exitCode: number) {
  return { ok: exitCode === 0, runs: results, notBuilt }
}

export function exitCodeOf(results: readonly RunResult[], explicitNotBuilt: readonly string[]): number {
  return results.every((r) => r.outcome === 'success') && explicitNotBuilt.length === 0 ? 0 : 1
}
