// What `fsm-sync status` shows, read from the mirror alone (it may run beside the daemon).
import type { Sqlite } from './mirror-database.js'

export interface StreamStatus {
  stream: string
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
  /** Requests runs recorded as spent in the last 60 seconds (runs still going count at the end). */
  requestsLastMinute: number
  webhookInbox: { backlog: number; failed: number } | null
}

const TABLE_OF: Record<string, string> = { clients: 'clients', jobs: 'jobs', visits: 'visits', invoices: 'invoices' }

export function statusReport(sqlite: Sqlite, now: number): StatusReport {
  const states = sqlite.prepare('SELECT stream, cursor, last_success_at, last_error, last_error_at FROM sync_state ORDER BY stream').all() as {
    stream: string
    cursor: string | null
    last_success_at: string | null
    last_error: string | null
    last_error_at: string | null
  }[]
  const names = new Set([...Object.keys(TABLE_OF), ...states.map((s) => s.stream)])
  const streams = [...names].sort().map((stream): StreamStatus => {
    const s = states.find((x) => x.stream === stream)
    const table = TABLE_OF[stream]
    const counts = table === undefined ? undefined : (sqlite.prepare(`SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM "${table}"`).get() as { live: number; deleted: number })
    const success = s?.last_success_at ?? null
    return {
      stream,
      cursor: s?.cursor ?? null,
      lastSuccessAt: success,
      lastError: s?.last_error ?? null,
      lastErrorAt: s?.last_error_at ?? null,
      rows: counts?.live ?? null,
      deleted: counts?.deleted ?? null,
      lagSeconds: success === null ? null : Math.max(0, Math.round((now - Date.parse(success)) / 1000)),
    }
  })
  const since = new Date(now - 60_000).toISOString()
  const requestsLastMinute = (sqlite.prepare(`SELECT coalesce(sum(requests), 0) FROM sync_runs WHERE coalesce(ended_at, started_at) >= ?`).pluck().get(since) as number) || 0
  const hasInbox = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'webhook_inbox'`).get() !== undefined
  const webhookInbox = hasInbox
    ? (sqlite.prepare(`SELECT count(*) FILTER (WHERE processed_at IS NULL AND error IS NULL) AS backlog, count(*) FILTER (WHERE error IS NOT NULL) AS failed FROM webhook_inbox`).get() as { backlog: number; failed: number })
    : null
  return { streams, requestsLastMinute, webhookInbox }
}
