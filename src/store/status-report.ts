// What `fsm-sync status` shows, read from the mirror alone (it may run beside the daemon).
import type { StatusStreams } from '../model/streams.js'
import type { Sqlite } from './mirror-database.js'
import { parseInstant } from '../model/timestamps.js'

export interface StreamStatus {
  stream: string
  /** The table its rows are counted in (custom objects: `custom_records` of that slug). */
  table: string | null
  cursor: string | null
  lastSuccessAt: string | null
  lastError: string | null
  lastErrorAt: string | null
  rows: number | null
  deleted: number | null
  /** Seconds since the last success, at the time of the report. */
  lagSeconds: number | null
}

export interface StatusReport {
  streams: StreamStatus[]
  /** Schedules switched off ("off") in the configuration the report was made with. */
  schedulesOff?: string[]
  /** Requests runs recorded as spent in the last 60 seconds (runs still going count at the end). */
  requestsLastMinute: number
  webhookInbox: { backlog: number; failed: number; skipped: number } | null
}

interface Counts {
  live: number
  deleted: number
}

export function statusReport(sqlite: Sqlite, now: number, known: StatusStreams): StatusReport {
  const states = sqlite
    .prepare('SELECT stream, cursor, last_success_at, last_error, last_error_at FROM sync_state ORDER BY stream')
    .all() as {
    stream: string
    cursor: string | null
    last_success_at: string | null
    last_error: string | null
    last_error_at: string | null
  }[]
  const tables = new Set(sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all() as string[])
  const split = `count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted`
  // Custom-object records per slug in one pass, rather than a count per object.
  const objectCounts = new Map<string, Counts>()
  const { table: objectTable, scope } = known.perObject
  if (tables.has(objectTable)) {
    for (const r of sqlite.prepare(`SELECT "${scope}" AS slug, ${split} FROM "${objectTable}" GROUP BY "${scope}"`).all() as (Counts & {
      slug: string
    })[])
      objectCounts.set(r.slug, r)
  }
  const countsOf = (stream: string): { table: string; counts: Counts } | undefined => {
    const { perObject } = known
    if (stream.startsWith(`${perObject.stream}:`)) {
      const slug = stream.slice(perObject.stream.length + 1)
      return { table: perObject.table, counts: objectCounts.get(slug) ?? { live: 0, deleted: 0 } }
    }
    const of = known.tables.get(stream)
    if (of === undefined || !tables.has(of.table)) return undefined
    const { table } = of
    if (!of.tombstones)
      return { table, counts: { live: sqlite.prepare(`SELECT count(*) FROM "${table}"`).pluck().get() as number, deleted: 0 } }
    return { table, counts: sqlite.prepare(`SELECT ${split} FROM "${table}"`).get() as Counts }
  }
  const names = new Set([...known.always, ...states.map((s) => s.stream)])
  const streams = [...names].sort().map((stream): StreamStatus => {
    const s = states.find((x) => x.stream === stream)
    const counted = countsOf(stream)
    const success = s?.last_success_at ?? null
    return {
      stream,
      table: counted?.table ?? null,
      cursor: s?.cursor ?? null,
      lastSuccessAt: success,
      lastError: s?.last_error ?? null,
      lastErrorAt: s?.last_error_at ?? null,
      rows: counted?.counts.live ?? null,
      deleted: counted?.counts.deleted ?? null,
      lagSeconds: success === null ? null : Math.max(0, Math.round((now - parseInstant(success)) / 1000)),
    }
  })
  const since = new Date(now - 60_000).toISOString()
  const requestsLastMinute =
    (sqlite
      .prepare(`SELECT coalesce(sum(requests), 0) FROM sync_runs WHERE coalesce(ended_at, started_at) >= ?`)
      .pluck()
      .get(since) as number) || 0
  const hasInbox = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'webhook_inbox'`).get() !== undefined
  // A mirror the daemon has not migrated yet (read-only here) has no skipped column: none skipped.
  const hasSkipped =
    hasInbox && sqlite.prepare(`SELECT 1 FROM pragma_table_info('webhook_inbox') WHERE name = 'skipped'`).get() !== undefined
  const webhookInbox = hasInbox
    ? (sqlite
        .prepare(
          `SELECT count(*) FILTER (WHERE processed_at IS NULL AND error IS NULL) AS backlog, count(*) FILTER (WHERE error IS NOT NULL) AS failed,
           ${hasSkipped ? 'count(*) FILTER (WHERE skipped IS NOT NULL)' : '0'} AS skipped FROM webhook_inbox`,
        )
        .get() as { backlog: number; failed: number; skipped: number })
    : null
  return { streams, requestsLastMinute, webhookInbox }
}
