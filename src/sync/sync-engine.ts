// Runs the selected streams (connectors/selection.ts reads the names) for `sync`, `reconcile` and
// the daemon, in registry order: record streams, reference data, account metadata, custom objects.
// A rejected API key ends the batch at its first 401: every other stream would get the same answer,
// so the rest are reported as skipped instead of each spending a request on it.
import { customObjects } from '../../connectors/custom-objects.js'
import type { Selection } from '../../connectors/selection.js'
import { objectStream } from '../model/streams.js'
import { CountingSource } from './counting-source.js'
import { readFirstPages } from './first-pages.js'
import { RUNNERS } from './stream-runners.js'
import type { RunResult, SyncContext } from './sync-context.js'

/** One run of a batch, not started yet: what it is called, and how to run it. */
interface Step {
  stream: string
  kind: RunResult['kind']
  run: () => Promise<RunResult | RunResult[]>
}

export async function runSweeps(ctx: SyncContext, selection: Selection, options: { full?: boolean } = {}): Promise<RunResult[]> {
  // The first page of every record stream walked from the start, read before any goes on: the
  // backfill estimate knows every size from the start, and each sweep takes its page as its first.
  const firstPages = await readFirstPages(ctx, selection.records, options)
  const steps: Step[] = [
    ...selection.records.map((s): Step => ({
      stream: s.name,
      kind: 'sweep',
      run: () => RUNNERS.records.sweep(ctx, s, { ...options, firstPages }),
    })),
    ...selection.reference.map((s): Step => ({ stream: s.name, kind: 'reference', run: () => RUNNERS.reference.sweep(ctx, s) })),
    ...selection.metadata.map((s): Step => ({ stream: s.name, kind: 'reference', run: () => RUNNERS.metadata.sweep(ctx, s) })),
  ]
  const objects = selection.objects
  if (objects !== undefined)
    steps.push({ stream: customObjects.name, kind: 'sweep', run: () => runObjects(ctx, objects, 'sweep', options) })
  return inTurn(ctx, steps)
}

export async function runReconciliations(ctx: SyncContext, selection: Selection): Promise<RunResult[]> {
  const steps: Step[] = selection.records
    .filter((s) => s.deletions.reconcile)
    .map((s) => ({ stream: s.name, kind: 'reconcile', run: () => RUNNERS.records.reconcile(ctx, s) }))
  const objects = selection.objects
  if (objects !== undefined) steps.push({ stream: customObjects.name, kind: 'reconcile', run: () => runObjects(ctx, objects, 'reconcile') })
  return inTurn(ctx, steps)
}

/** The code of a run that failed because the upstream refused the API key (401). */
export const KEY_REJECTED = 'API_UNAUTHORIZED'

/**
 * Runs `steps` one after the other until the signal stops them, the account's lease is lost (a run
 * interrupted as FENCED: the rest are not started) or the key is rejected (the rest: skipped).
 */
async function inTurn(ctx: SyncContext, steps: readonly Step[]): Promise<RunResult[]> {
  const results: RunResult[] = []
  for (const [i, step] of steps.entries()) {
    if (ctx.signal?.aborted === true) break
    results.push(...[await step.run()].flat())
    if (results.some((r) => r.errorCode === 'FENCED')) break
    const rejected = results.find((r) => r.errorCode === KEY_REJECTED)
    if (rejected !== undefined) {
      results.push(...steps.slice(i + 1).map((s) => skipped(s, rejected)))
      break
    }
  }
  return results
}

function skipped(step: Step, cause: RunResult): RunResult {
  return {
    stream: step.stream,
    kind: step.kind,
    outcome: 'skipped',
    rows: 0,
    requests: 0,
    durationMs: 0,
    error: `not run because the API key was rejected on ${cause.stream}: every stream would get the same answer`,
  }
}

/** Discovery first, as a run of its own (stream-runners.ts), then each object's records. */
async function runObjects(
  ctx: SyncContext,
  which: 'all' | string[],
  kind: 'sweep' | 'reconcile',
  options: { full?: boolean } = {},
): Promise<RunResult[]> {
  const source = new CountingSource(ctx.upstream, ctx.now)
  const { result, found } = await RUNNERS.objects.discover(ctx, source, kind, which, { ...options, missing: 'fail' })
  if (result.outcome !== 'success' || found === undefined) return [result]
  const steps = found.slugs.map((slug): Step => {
    const discovery = found.items.get(slug)
    return {
      stream: objectStream(slug),
      kind,
      run: () =>
        kind === 'sweep'
          ? RUNNERS.objects.sweep(ctx, slug, source, { ...options, ...(discovery === undefined ? {} : { discovery }) })
          : RUNNERS.objects.reconcile(ctx, slug, source),
    }
  })
  return [result, ...(await inTurn(ctx, steps))]
}
