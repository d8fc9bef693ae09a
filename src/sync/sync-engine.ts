// Runs streams by name for `sync`, `reconcile` and the daemon. Streams whose connector has not
// landed yet are reported as such, never silently dropped.
import { RECORD_STREAMS, type RecordStream } from '../../connectors/index.js'
import { REFERENCE_STREAMS, type ReferenceStream } from '../../connectors/reference.js'
import { syncReference } from './reference-sync.js'
import { syncMetadata } from './metadata-sync.js'
import { KeysetCursorSchema } from '../api/updated-at-keyset.js'
import { CountingSource } from './counting-source.js'
import type { DiscoveryItem } from '../../connectors/custom-objects.js'
import { discoverObjects, reconcileObjectRecords, sweepObjectRecords } from './custom-object-sync.js'
import { trackedRun } from './tracked-run.js'
import { reconcileRecords } from './reconcile-records.js'
import { sweepRecords } from './record-sweep.js'
import type { RunResult, SyncContext } from './sync-context.js'

export interface Selection {
  records: RecordStream[]
  reference: ReferenceStream[]
  metadata: ('webhooks' | 'api_keys')[]
  /** Custom objects: every one (`objects`), the named slugs (`objects:<slug>`), or none. */
  objects: 'all' | string[] | undefined
  /** Named streams with no connector yet. */
  notBuilt: string[]
}

export function selectStreams(names: readonly string[]): Selection {
  const records: RecordStream[] = []
  const reference: ReferenceStream[] = []
  const metadata: Selection['metadata'] = []
  const notBuilt: string[] = []
  let objects: Selection['objects']
  for (const name of names) {
    const stream = RECORD_STREAMS.find((s) => s.name === name)
    const ref = REFERENCE_STREAMS.find((s) => s.name === name)
    if (stream !== undefined) {
      if (!records.includes(stream)) records.push(stream)
    } else if (ref !== undefined) {
      if (!reference.includes(ref)) reference.push(ref)
    } else if (name === 'webhooks' || name === 'api_keys') {
      if (!metadata.includes(name)) metadata.push(name)
    } else if (name === 'objects') objects = 'all'
    else if (name.startsWith('objects:')) {
      if (objects !== 'all') objects = [...(objects ?? []), name.slice('objects:'.length)]
    } else notBuilt.push(name)
  }
  // Parents before children, whatever order the names came in.
  records.sort((a, b) => RECORD_STREAMS.indexOf(a) - RECORD_STREAMS.indexOf(b))
  return { records, reference, metadata, objects, notBuilt }
}

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
  for (const name of selection.metadata) {
    if (ctx.signal?.aborted === true) return results
    results.push(await syncMetadata(ctx, name))
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
    'objects',
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
