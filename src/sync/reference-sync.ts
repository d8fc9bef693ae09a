// Reference data (items, taxes, team, job forms, company): each a full snapshot from a legacy route.
// Rows missing from a complete snapshot get deleted_at; an empty snapshot over a non-empty table is
// taken for a broken answer and marks nothing.
import { legacyRows, referenceRow } from '../../connectors/reference.js'
import type { ReferenceStream } from '../model/streams.js'
import type { RecordRow } from '../model/rows.js'
import { applySnapshot } from './apply-snapshot.js'
import { isoNow } from '../model/timestamps.js'
import { trackedRun } from './tracked-run.js'
import type { RunResult, SyncContext } from './sync-context.js'

const shapesLogged = new WeakMap<SyncContext['logger'], Set<string>>()

export function syncReference(ctx: SyncContext, stream: ReferenceStream): Promise<RunResult> {
  return trackedRun(ctx, 'reference', stream.name, async ({ source }) => {
    const res = await source.get(stream.route, undefined, { priority: 'sweep', signal: ctx.signal })
    const { rows: payloads, shape } = legacyRows(res.data, stream)
    logShapeOnce(ctx, stream, shape)
    const rows = payloads.map((p) => referenceRow(stream, p)).filter((r): r is RecordRow => r !== undefined)
    const skipped = payloads.length - rows.length
    if (skipped > 0) ctx.logger.warn({ stream: stream.name, skipped }, 'reference rows without any id (id, _id, recordId) were skipped')
    const changed = applySnapshot(ctx, stream.table, rows, {
      observedAt: isoNow(source.lastStartedAt),
      refuseEmpty: true,
      stream: stream.name,
    })
    return { rows: changed }
  })
}

function logShapeOnce(ctx: SyncContext, stream: ReferenceStream, shape: string): void {
  let seen = shapesLogged.get(ctx.logger)
  if (seen === undefined) shapesLogged.set(ctx.logger, (seen = new Set()))
  const key = `${stream.name}:${shape}`
  if (seen.has(key)) return
  seen.add(key)
  // Which of the documented shapes a route answers with is of interest only when one changes.
  ctx.logger.debug({ stream: stream.name, route: stream.route, shape }, 'legacy list shape found')
}
