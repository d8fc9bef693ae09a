// calendar-a's change feed (spec: Integrations): `GET /api/v1/integrations/calendar-a/sync` lists
// change records (an `action`, the visit id where applicable, the external event id) and pages by
// `next_cursor`. It is read after each calendar-a trigger, into `calendar_changes`, as a tracked
// `sweep` of the stream `calendar_changes`: each page commits with the resume point (`since`) in
// sync_state, so a stop loses at most the page in flight. The key names of a record are "not
// shown" in the spec, so several spellings are read and `raw` keeps the record whole.
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { reader } from '../../connectors/columns.js'
import { calendarChangesTable, calendarFeed } from '../../connectors/integrations.js'
import type { ApiClient } from '../api/api-client.js'
import { CalendarChangeStore, type CalendarChange } from '../store/repositories/calendar-changes.js'
import { canonicalTimeOrText, isoNow, parseInstant } from '../model/timestamps.js'
import type { RunResult, SyncContext } from './sync-context.js'
import { resumeCursor } from './resume-cursor.js'
import { trackedRun } from './tracked-run.js'

const CALENDAR_FEED_STREAM = calendarFeed.name
const ROUTE = calendarFeed.route
/** A feed that never ends its cursor chain is cut here (1,000 pages of up to 100 records). */
const MAX_PAGES = 1_000

export type CalendarChangeRow = CalendarChange

/** The stored cursor of the feed; read back through this schema. */
export const FeedCursorSchema = z.object({
  /** The `since` of the next read: the latest change time seen (re-read inclusively, deduplicated). */
  since: z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time'),
})
type FeedCursor = z.infer<typeof FeedCursorSchema>

const pick = (d: Record<string, unknown>, keys: readonly string[]): unknown => {
  for (const k of keys) if (d[k] !== undefined && d[k] !== null) return d[k]
  return undefined
}
/** The spellings a change record's column is read from, as calendar_changes declares them. */
const column = (name: string) => reader(calendarChangesTable.columns.find((c) => c.name === name)?.from ?? name)
const read = {
  action: column('action'),
  visitId: column('visit_id'),
  externalEventId: column('external_event_id'),
  changedAt: column('changed_at'),
}
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null)

/** One change record as a row; undefined for something that is not an object. Pure. */
export function calendarChangeRow(record: unknown): CalendarChangeRow | undefined {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return undefined
  const d = record as Record<string, unknown>
  const raw = JSON.stringify(record)
  const externalEventId = text(read.externalEventId(d))
  const changedAt = canonicalTimeOrText(read.changedAt(d))
  return {
    // A re-read of the same change (the boundary of `since`, a repeated page) keeps one row.
    change_key:
      externalEventId !== null && changedAt !== null
        ? `${externalEventId}@${changedAt}`
        : `sha256:${createHash('sha256').update(raw).digest('hex')}`,
    action: text(read.action(d)),
    visit_id: text(read.visitId(d)),
    external_event_id: externalEventId,
    changed_at: changedAt,
    raw,
  }
}

/** The records of a feed page, and its next cursor (top level `next_cursor`, or in `meta`). Pure. */
export function feedPage(
  body: unknown,
  data: unknown,
  meta: Record<string, unknown> | undefined,
): { records: unknown[]; next: string | null } {
  const b = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const d = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : {}
  const records = Array.isArray(data) ? data : Array.isArray(d.changes) ? d.changes : Array.isArray(d.items) ? d.items : []
  const next = text(
    pick(b, ['next_cursor', 'nextCursor']) ?? pick(meta ?? {}, ['next_cursor', 'nextCursor']) ?? pick(d, ['next_cursor', 'nextCursor']),
  )
  return { records, next }
}

/** Reads the feed from the stored `since` to its end; returns the run recorded in sync_runs. */
export function syncCalendarFeed(ctx: SyncContext, client: Pick<ApiClient, 'get'>): Promise<RunResult> {
  return trackedRun(ctx, 'sweep', CALENDAR_FEED_STREAM, async ({ source, committed, runId }) => {
    // Without a stored point the service's own default applies: changes since its last sync. An
    // unreadable point restarts there too, as on the first read: the newest change in the table is
    // no safe point, since a walk stopped mid-way stores its rows without moving the point.
    const { cursor: stored, cursorReset } = resumeCursor(ctx, CALENDAR_FEED_STREAM, runId, FeedCursorSchema, "the feed's default point")
    const since = stored?.since
    const walkStarted = ctx.now()
    const changes = new CalendarChangeStore(ctx.mirror.sqlite, calendarFeed.integration)
    const commit = ctx.mirror.sqlite.transaction((rows: CalendarChangeRow[], point: string | undefined) => {
      const now = isoNow(ctx.now())
      const n = changes.insert(rows, now)
      if (point !== undefined) ctx.state.setCursor(CALENDAR_FEED_STREAM, { since: point } satisfies FeedCursor, now)
      return n
    })
    let latest = since
    let cursor: string | null = null
    let pages = 0
    let records = 0
    do {
      const query: Record<string, string> = {}
      if (since !== undefined) query.since = since
      if (cursor !== null) query.cursor = cursor
      const res = await client.get(ROUTE, query, source.counted({ priority: 'trigger', signal: ctx.signal }))
      const page = feedPage(res.body, res.data, res.meta)
      const rows = page.records.map(calendarChangeRow).filter((r): r is CalendarChangeRow => r !== undefined)
      records += rows.length
      for (const r of rows)
        if (r.changed_at !== null && /^\d{4}-/.test(r.changed_at) && (latest === undefined || r.changed_at > latest)) latest = r.changed_at
      // Mid-walk the point stays where the walk began: a stop re-reads this walk, never skips it.
      const last = page.next === null
      committed.rows += commit(rows, last ? resumePoint(latest, walkStarted, ctx.options.lookbackMs, since) : undefined)
      cursor = page.next
      pages++
      if (pages >= MAX_PAGES && cursor !== null) {
        // The spec does not say the feed is ordered by time: a record on an unread page may be older
        // than the latest seen, so the point stays where this walk began and the next read re-walks
        // (rows already stored are not stored twice).
        ctx.logger.warn({ pages }, 'calendar-a change feed still had pages after the limit; the next read starts again from the same point')
        break
      }
    } while (cursor !== null && ctx.signal?.aborted !== true)
    return {
      rows: committed.rows,
      details: { records, pages, ...(since === undefined ? {} : { since }), ...(cursorReset === undefined ? {} : { cursorReset }) },
    }
  })
}

/**
 * The next `since`: the latest change time seen less the look-back (a change committed late with an
 * earlier time, clock skew), or the time this walk began less the look-back when the feed said
 * nothing newer; never earlier than the previous point. Re-reading the overlap stores nothing twice.
 */
export function resumePoint(latest: string | undefined, walkStarted: number, lookbackMs: number, previous: string | undefined): string {
  const newest = latest !== undefined && latest !== previous ? parseInstant(latest) : walkStarted
  const point = isoNow((Number.isNaN(newest) ? walkStarted : newest) - lookbackMs)
  return previous !== undefined && previous > point ? previous : point
}
