// Account metadata snapshots: webhook endpoints with their delivery records (`webhooks`), and API
// keys (`api_keys`). Endpoints and keys missing from a complete listing get deleted_at; delivery
// records are kept as history (the upstream deletes them only with their endpoint).
import { apiKeys, metadataRow, webhookDeliveries, webhookEndpoints, type MetadataStream } from '../../connectors/account-metadata.js'
import { extractRows } from '../api/page-rows.js'
import { pageWalk } from '../api/page-walk.js'
import type { RecordRow } from '../model/rows.js'
import { RecordWriter } from '../store/record-writer.js'
import { isoNow } from '../model/timestamps.js'
import { applySnapshot } from './apply-snapshot.js'
import { trackedRun } from './tracked-run.js'
import type { RunResult, SyncContext } from './sync-context.js'

export function syncMetadata(ctx: SyncContext, name: 'webhooks' | 'api_keys'): Promise<RunResult> {
  return trackedRun(ctx, 'reference', name, async ({ source, committed }) => {
    const walk = { priority: 'sweep' as const, ...(ctx.signal === undefined ? {} : { signal: ctx.signal }) }
    if (name === 'api_keys') {
      const res = await source.get(apiKeys.route, undefined, { priority: 'sweep', signal: ctx.signal })
      return { rows: snapshot(ctx, apiKeys, extractRows(res, apiKeys.route), isoNow(source.lastStartedAt)) }
    }
    const endpoints: Record<string, unknown>[] = []
    for await (const page of pageWalk(source, webhookEndpoints.route, walk)) endpoints.push(...page.rows)
    committed.rows = snapshot(ctx, webhookEndpoints, endpoints, isoNow(source.lastStartedAt))
    const writer = new RecordWriter(ctx.mirror.sqlite, webhookDeliveries.table)
    for (const endpoint of endpoints) {
      if (typeof endpoint.id !== 'string') continue
      const endpointId = endpoint.id
      for await (const page of pageWalk(source, `/api/v1/webhooks/${endpointId}/deliveries`, walk)) {
        const mapped = page.rows
          .map((r) => metadataRow(webhookDeliveries, r, { endpoint_id: endpointId }))
          .filter((r): r is RecordRow => r !== undefined)
        committed.rows += ctx.mirror.sqlite.transaction(
          () => writer.upsert(mapped, { now: isoNow(ctx.now()), replaceTies: true }).changed.length,
        )()
      }
    }
    return { rows: committed.rows }
  })
}

function snapshot(ctx: SyncContext, stream: MetadataStream, payloads: readonly Record<string, unknown>[], observedAt: string): number {
  const rows = payloads.map((p) => metadataRow(stream, p)).filter((r): r is RecordRow => r !== undefined)
  // An account may really have no endpoint left, so an empty listing is taken as it is.
  return applySnapshot(ctx, stream.table, rows, { observedAt, refuseEmpty: false, stream: stream.name })
}
