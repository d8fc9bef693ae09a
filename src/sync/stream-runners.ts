// How a run of each stream kind (`StreamDeclaration['kind']`, src/model/streams.ts) starts, in one
// table: the one-shot batches (sync-engine.ts), the daemon's continuous sweeps and its trigger
// schedules (src/daemon/sweep-loop.ts, sync-jobs.ts) all run streams through it. Custom objects run
// as a discovery of their own, then one run per object (`objectStream(slug)`), on one counting
// source so that discovery is charged once.
import { customObjects } from '../../connectors/custom-objects.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import type { StreamDeclaration } from '../model/streams.js'
import { syncCalendarFeed } from './calendar-feed.js'
import type { CountingSource } from './counting-source.js'
import { discoverObjects, reconcileObjectRecords, sweepObjectRecords } from './custom-object-sync.js'
import { runTrigger } from './integration-triggers.js'
import { syncMetadata } from './metadata-sync.js'
import { reconcileRecords } from './reconcile-records.js'
import { sweepRecords } from './record-sweep.js'
import { syncReference } from './reference-sync.js'
import type { RunResult, SyncContext } from './sync-context.js'
import { trackedRun } from './tracked-run.js'

/** A custom-object discovery's run, and what it found when it read the account. */
export interface ObjectDiscovery {
  result: RunResult
  /** The objects to run (those of `which` the account has) and each one's discovery item. */
  found?: { slugs: string[]; items: Map<string, DiscoveryItem> }
}

/**
 * Discovery (with schemas and views) as a run of its own. `missing`: whether a named slug the
 * account does not have fails the discovery (a batch: the user asked for it) or is left out (the
 * daemon's sweeps, which discover again every few minutes).
 */
async function discoverObjectsRun(
  ctx: SyncContext,
  source: CountingSource,
  kind: 'sweep' | 'reconcile',
  which: 'all' | readonly string[],
  options: { full?: boolean; missing: 'fail' | 'skip' },
): Promise<ObjectDiscovery> {
  let found: ObjectDiscovery['found']
  const result = await trackedRun(
    ctx,
    kind,
    customObjects.name,
    async () => {
      const discovered = await discoverObjects(ctx, source, options.full === undefined ? {} : { full: options.full })
      const slugs = which === 'all' ? discovered.slugs : which.filter((s) => discovered.slugs.includes(s))
      const unknown = which === 'all' ? [] : which.filter((s) => !discovered.slugs.includes(s))
      if (unknown.length > 0 && options.missing === 'fail')
        throw new Error(
          `no custom object ${unknown.map((s) => `'${s}'`).join(', ')} on this account (discovered: ${discovered.slugs.join(', ') || 'none'})`,
        )
      found = { slugs, items: discovered.items }
      return {
        rows: discovered.changed,
        details: { slugs: discovered.slugs, disabled: discovered.disabled, schemasFetched: discovered.fetched },
      }
    },
    // Discovery writes only what changed: a quiet one commits once, its run's row at its end.
    { source, rowAtFirstCommit: true },
  )
  return found === undefined ? { result } : { result, found }
}

/** The runners of each stream kind; every kind of the registry has its entry. */
export const RUNNERS = {
  records: { sweep: sweepRecords, reconcile: reconcileRecords },
  reference: { sweep: syncReference },
  metadata: { sweep: syncMetadata },
  objects: { discover: discoverObjectsRun, sweep: sweepObjectRecords, reconcile: reconcileObjectRecords },
  feed: { sweep: syncCalendarFeed },
  trigger: { run: runTrigger },
} as const satisfies Record<StreamDeclaration['kind'], object>
