// Account metadata snapshots: webhook endpoints with their delivery records (`webhooks`), and API
// keys (`api_keys`). Endpoints and keys missing from a complete listing get deleted_at; delivery
// records are kept as history (the upstream deletes them only with their endpoint).
import { metadataRow } from '../../connectors/account-metadata.js'
import type { RecordRow } from '../model/rows.js'
import type { MetadataListing, MetadataStream } from '../model/streams.js'
import { extractRows } from '../api/page-rows.js'
import { pageWalk } from '../api/page-walk.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { isoNow } from '../model/timestamps.js'
import { applySnapshot } from './apply-snapshot.js'
import { trackedRun } from './tracked-run.js'
import type { RunResult, SyncContext } from './sync-context.js'

export function syncMetadata(ctx: SyncContext, stream: MetadataStream): Promise<RunResult> {
  return trackedRun(ctx, 'reference', stream.name, async ({ source, committed }) => {
    const walk = { priority: 'sweep' as const, ...(ctx.signal === undefined ? {} : { signal: ctx.signal }) }
    const { list, perRecord } = stream
    const listed: Record<string, unknown>[] = []
    if (list.paged) for await (const page of pageWalk(source, list.route, walk)) listed.push(...page.rows)
    else listed.push(...extractRows(await source.get(list.route, undefined, { priority: 'sweep', signal: ctx.signal }), list.route))
    committed.rows = snapshot(ctx, stream.name, list, listed, isoNow(source.lastStartedAt))
    if (perRecord === undefined) return { rows: committed.rows }
    const writer = new RecordWriter(ctx.mirror.sqlite, perRecord.table)
    for (const parent of listed) {
      if (typeof parent.id !== 'string') continue
      const extra = { [perRecord.parentColumn]: parent.id }
      for await (const page of pageWalk(source, perRecord.routeOf(parent.id), walk)) {
        const mapped = page.rows.map((r) => metadataRow(perRecord, r, extra)).filter((r): r is RecordRow => r !== undefined)
        committed.rows += ctx.mirror.sqlite.transaction(
          () => writer.upsert(mapped, { now: isoNow(ctx.now()), replaceTies: true }).changed.length,
        )()
      }
    }
    return { rows: committed.rows }
  })
}

function snapshot(
  ctx: SyncContext,
  stream: string,
  listing: MetadataListing,
  payloads: readonly Record<string, unknown>[],
  observedAt: string,
): number {
  const rows = payloads.map((p) => metadataRow(listing, p)).filter((r): r is RecordRow => r !== undefined)
  // An account may really have no endpoint left, so an empty listing is taken as it is.
  return applySnapshot(ctx, listing.table, rows, { observedAt, refuseEmpty: false, stream })
}
