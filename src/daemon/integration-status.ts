// Polls and stores a calendar's status (spec: Integrations: `GET .../calendar-a/status`, `data`
// holds exactly connected, email, lastSyncAt, calendarId). Only calendar-a documents the route.
// A failed read is stored as the row's `error`, so `query` shows why the status is old.
import { TRIGGERS } from '../../connectors/integrations.js'
import type { ApiClient } from '../api/api-client.js'
import type { Sqlite } from '../store/mirror-database.js'
import { canonicalTimeOrText, isoNow } from '../model/timestamps.js'
import { describeError } from '../sync/describe-error.js'

export interface CalendarStatus {
  connected: boolean | null
  email: string | null
  lastSyncAt: string | null
  calendarId: string | null
}

export function parseCalendarStatus(data: unknown): CalendarStatus {
  const d = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {}
  const str = (v: unknown) => (typeof v === 'string' ? v : null)
  return {
    connected: typeof d.connected === 'boolean' ? d.connected : null,
    email: str(d.email),
    lastSyncAt: canonicalTimeOrText(d.lastSyncAt),
    calendarId: str(d.calendarId),
  }
}

export async function pollCalendarStatus(
  sqlite: Sqlite,
  client: Pick<ApiClient, 'get'>,
  name: 'calendar-a',
  options: { signal?: AbortSignal; now?: () => number } = {},
): Promise<CalendarStatus | undefined> {
  const checkedAt = isoNow((options.now ?? Date.now)())
  const upsert = sqlite.prepare(
    `INSERT INTO integration_status (name, connected, email, last_sync_at, calendar_id, error, raw, checked_at)
     VALUES (@name, @connected, @email, @lastSyncAt, @calendarId, @error, @raw, @checkedAt)
     ON CONFLICT(name) DO UPDATE SET connected = excluded.connected, email = excluded.email, last_sync_at = excluded.last_sync_at,
       calendar_id = excluded.calendar_id, error = excluded.error, raw = excluded.raw, checked_at = excluded.checked_at`,
  )
  try {
    // calendar-a declares its status route (connectors/integrations.ts).
    const route = TRIGGERS.find((t) => t.name === name)!.statusRoute!
    const res = await client.get(route, undefined, { priority: 'trigger', signal: options.signal })
    const status = parseCalendarStatus(res.data)
    upsert.run({
      name,
      ...status,
      connected: status.connected === null ? null : Number(status.connected),
      error: null,
      raw: JSON.stringify(res.data),
      checkedAt,
    })
    return status
  } catch (err) {
    // Keep the last known values; record only why this read failed.
    sqlite
      .prepare(
        `INSERT INTO integration_status (name, error, checked_at) VALUES (?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET error = excluded.error, checked_at = excluded.checked_at`,
      )
      .run(name, describeError(err), checkedAt)
    return undefined
  }
}
