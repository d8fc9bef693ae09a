// Printing of run results, shared by `sync`, `reconcile` and the demo's backfill: a table with a
// header row, each run's error on the line below it.
import type { RunResult } from '../sync/sync-context.js'

interface Column<R> {
  header: string
  right: boolean
  /** The cell, or undefined when it does not apply to this run (a column no run fills is left out). */
  cell: (r: R) => string | undefined
}

/**
 * One line per run under a header. A sweep shows the rows it changed; a reconciliation the rows it
 * checked (every live id of the list it walked) and the rows it marked deleted. `snapshot`: runs
 * that read reference data whole, shown as "snapshot" instead of rows and requests (its rows
 * changed and the requests of a listing say nothing of how big it is).
 */
export function formatResults<R extends RunResult>(
  results: readonly R[],
  notBuilt: readonly string[],
  options: { snapshot?: (r: R) => boolean } = {},
): string {
  const snapshot = (r: R) => options.snapshot?.(r) === true
  const ran = (r: R) => r.outcome !== 'skipped'
  const checked = (r: R) => (r.kind === 'reconcile' && typeof r.details?.walked === 'number' ? r.details.walked : undefined)
  const columns: Column<R>[] = [
    { header: 'stream', right: false, cell: (r) => r.stream },
    { header: 'kind', right: false, cell: (r) => r.kind },
    { header: 'outcome', right: false, cell: (r) => r.outcome },
    {
      header: 'rows changed',
      right: true,
      cell: (r) => (!ran(r) || checked(r) !== undefined ? undefined : snapshot(r) ? 'snapshot' : count(r.rows)),
    },
    { header: 'checked', right: true, cell: (r) => (ran(r) ? optional(checked(r)) : undefined) },
    { header: 'marked deleted', right: true, cell: (r) => (ran(r) && checked(r) !== undefined ? count(r.rows) : undefined) },
    { header: 'requests', right: true, cell: (r) => (ran(r) && !snapshot(r) ? count(r.requests) : undefined) },
    { header: 'time', right: true, cell: (r) => (ran(r) ? `${(r.durationMs / 1000).toFixed(1)} s` : undefined) },
  ]
  const shown = columns.filter((c, i) => i < 3 || results.some((r) => c.cell(r) !== undefined))
  const cells = results.map((r) => shown.map((c) => c.cell(r) ?? ''))
  const widths = shown.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)))
  const line = (row: readonly string[]) =>
    row
      .map((text, i) => (shown[i]!.right ? text.padStart(widths[i]!) : text.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  const lines = results.length === 0 ? [] : [line(shown.map((c) => c.header))]
  results.forEach((r, i) => {
    lines.push(line(cells[i]!))
    if (r.error !== undefined && ran(r)) lines.push(`  ${r.error}`)
  })
  // Runs skipped for one reason are named together, the reason once.
  const skipped = new Map<string, string[]>()
  for (const r of results) if (!ran(r)) skipped.set(r.error ?? 'not run', [...(skipped.get(r.error ?? 'not run') ?? []), r.stream])
  for (const [why, streams] of skipped) lines.push(`skipped: ${streams.join(', ')} (${why})`)
  for (const name of notBuilt) lines.push(`${name} skipped: this stream is not built yet (see README.md, Roadmap)`)
  return lines.length === 0 ? '' : lines.join('\n') + '\n'
}

function count(n: number): string {
  return n.toLocaleString('en-US')
}

function optional(n: number | undefined): string | undefined {
  return n === undefined ? undefined : count(n)
}

/** What `sync --json` and `reconcile --json` print: every run as recorded, and `ok` as the exit code says. */
export function runsDocument(results: readonly RunResult[], notBuilt: readonly string[], exitCode: number) {
  return { ok: exitCode === 0, runs: results, notBuilt }
}

export function exitCodeOf(results: readonly RunResult[], explicitNotBuilt: readonly string[]): number {
  return results.every((r) => r.outcome === 'success') && explicitNotBuilt.length === 0 ? 0 : 1
}
