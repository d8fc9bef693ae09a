// Runs the selected streams (connectors/selection.ts reads the names) for `sync`, `reconcile` and
// the daemon, in registry order: record streams, reference data, account metadata, custom objects.
import { customObjects } from '../../connectors/custom-objects.js'
import type { Selection } from '../../connectors/selection.js'
import { syncReference } from './reference-sync.js'
import { syncMetadata } from './metadata-sync.js'
import { KeysetCursorSchema } from '../api/keyset/index.js'
import { CountingSource } from './counting-source.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import { discoverObjects, reconcileObjectRecords, sweepObjectRecords } from './custom-object-sync.js'
import { trackedRun } from './tracked-run.js'
import { reconcileRecords } from './reconcile-records.js'
import { sweepRecords } from './record-sweep.js'
import type { RunResult, SyncContext } from './sync-context.js'

export async function runSweeps(ctx: SyncContext, selection: Selection, options: { full?: boolean } = {}): Promise<RunResult[]> {
  const results: RunResult[] = []
  // The record streams this batch walks from the start, so that the backfill estimate names those not started yet.
  ctx.progress?.plan?.(selection.records.filter((s) => options.full === true || !hasCursor(ctx, s.name)).map((s) => s.name))
  for (const stream of selection.records) {
    if (ctx.signal?.aborted === true) return results
    results.push(await sweepRecords(ctx, stream, options))
  }
  for (const stream of selection.reference) {
    if (ctx.signal?.aborted === true) return results
    results.push(await syncReference(ctx, stream))
  }
  for (const stream of selection.metadata) {
    if (ctx.signal?.aborted === true) return results
    results.push(await syncMetadata(ctx, stream))
  }
  if (selection.objects !== undefined && ctx.signal?.aborted !== true)
    results.push(...(await runObjects(ctx, selection.objects, 'sweep', options)))
  return results
}

/** Whether a sweep of `stream` would resume from a stored cursor (one that cannot be read restarts it from the start). */
function hasCursor(ctx: SyncContext, stream: string): boolean {
  const stored = ctx.state.readCursor(stream, KeysetCursorSchema)
  return stored.ok && stored.cursor !== undefined
}

export async function runReconciliations(ctx: SyncContext, selection: Selection): Promise<RunResult[]> {
  const results: RunResult[] = []
  for (const stream of selection.records) {
    if (!stream.deletions.reconcile || ctx.signal?.aborted === true) continue
    results.push(await reconcileRecords(ctx, stream))
  }
  if (selection.objects !== undefined && ctx.signal?.aborted !== true)
    results.push(...(await runObjects(ctx, selection.objects, 'reconcile')))
  return results
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
  const results: RunResult[] = [discovery]
  if (discovery.outcome !== 'success') return results
  for (const slug of slugs) {
    if (ctx.signal?.aborted === true) break
    const discovered = items.get(slug)
    results.push(
      kind === 'sweep'
        ? await sweepObjectRecords(ctx, slug, source, { ...options, ...(discovered === undefined ? {} : { discovery: discovered }) })
        : await reconcileObjectRecords(ctx, slug, source),
    )
  }
  return results
}
