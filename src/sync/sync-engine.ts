// Runs the selected streams (connectors/selection.ts reads the names) for `sync`, `reconcile` and
// the daemon, in registry order: record streams, reference data, account metadata, custom objects.
// A rejected API key ends the batch at its first 401: every other stream would get the same answer,
// so the rest are reported as skipped instead of each spending a request on it.
import { customObjects } from '../../connectors/custom-objects.js'
import type { Selection } from '../../connectors/selection.js'
import { syncReference } from './reference-sync.js'
import { syncMetadata } from './metadata-sync.js'
import { CountingSource } from './counting-source.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import { objectStream } from '../model/streams.js'
import { discoverObjects, reconcileObjectRecords, sweepObjectRecords } from './custom-object-sync.js'
import { readFirstPages } from './first-pages.js'
import { trackedRun } from './tracked-run.js'
import { reconcileRecords } from './reconcile-records.js'
import { sweepRecords } from './record-sweep.js'
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
    ...selection.records.map((s): Step => ({ stream: s.name, kind: 'sweep', run: () => sweepRecords(ctx, s, { ...options, firstPages }) })),
    ...selection.reference.map((s): Step => ({ stream: s.name, kind: 'reference', run: () => syncReference(ctx, s) })),
    ...selection.metadata.map((s): Step => ({ stream: s.name, kind: 'reference', run: () => syncMetadata(ctx, s) })),
  ]
  const objects = selection.objects
  if (objects !== undefined)
    steps.push({ stream: customObjects.name, kind: 'sweep', run: () => runObjects(ctx, objects, 'sweep', options) })
  return inTurn(ctx, steps)
}

export async function runReconciliations(ctx: SyncContext, selection: Selection): Promise<RunResult[]> {
  const steps: Step[] = selection.records
    .filter((s) => s.deletions.reconcile)
    .map((s) => ({ stream: s.name, kind: 'reconcile', run: () => reconcileRecords(ctx, s) }))
  const objects = selection.objects
  if (objects !== undefined) steps.push({ stream: customObjects.name, kind: 'reconcile', run: () => runObjects(ctx, objects, 'reconcile') })
  return inTurn(ctx, steps)
}

/** The code of a run that failed because the upstream refused the API key (401). */
export const KEY_REJECTED = 'API_UNAUTHORIZED'

/** Runs `steps` one after the other until the signal stops them or the key is rejected (the rest: skipped). */
async function inTurn(ctx: SyncContext, steps: readonly Step[]): Promise<RunResult[]> {
  const results: RunResult[] = []
  for (const [i, step] of steps.entries()) {
    if (ctx.signal?.aborted === true) break
    results.push(...[await step.run()].flat())
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

/** Discovery (with schemas and views) first, as a run of its own, then each object's records. */
async function runObjects(
  ctx: SyncContext,
  which: 'all' | string[],
  kind: 'sweep' | 'reconcile',
  options: { full?: boolean } = {},
): Promise<RunResult[]> {
  const source = new CountingSource(ctx.upstream, ctx.now)
  let slugs: string[] = []
  let items = new Map<string, DiscoveryItem>()
  const discovery = await trackedRun(
    ctx,
    kind,
    customObjects.name,
    async () => {
      const found = await discoverObjects(ctx, source, options)
      items = found.items
      slugs = which === 'all' ? found.slugs : which
      const unknown = slugs.filter((s) => !found.slugs.includes(s))
      if (unknown.length > 0)
        throw new Error(
          `no custom object ${unknown.map((s) => `'${s}'`).join(', ')} on this account (discovered: ${found.slugs.join(', ') || 'none'})`,
        )
      return { rows: found.changed, details: { slugs: found.slugs, disabled: found.disabled, schemasFetched: found.fetched } }
    },
    source,
  )
  if (discovery.outcome !== 'success') return [discovery]
  const steps = slugs.map((slug): Step => {
    const discovered = items.get(slug)
    return {
      stream: objectStream(slug),
      kind,
      run: () =>
        kind === 'sweep'
          ? sweepObjectRecords(ctx, slug, source, { ...options, ...(discovered === undefined ? {} : { discovery: discovered }) })
          : reconcileObjectRecords(ctx, slug, source),
    }
  })
  return [discovery, ...(await inTurn(ctx, steps))]
}
