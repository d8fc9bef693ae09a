// Polls and stores a calendar's status (spec: Integrations: `GET .../calendar-a/status`, `data`
// holds exactly connected, email, lastSyncAt, calendarId). Only calendar-a documents the route.
// A failed read is stored as the row's `error`, so `query` shows why the status is old.
import { TRIGGERS } from '../../connectors/integrations.js'
import type { ApiClient } from '../api/api-client.js'
import { IntegrationStatusStore } from '../store/repositories/integration-status.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { systemClock } from '../model/clock.js'
import { canonicalTimeOrText, isoNow } from '../model/timestamps.js'
import { describeError } from './describe-error.js'

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
  const checkedAt = isoNow(options.now?.() ?? systemClock.now())
  const store = new IntegrationStatusStore(sqlite)
  try {
    // calendar-a declares its status route (connectors/integrations.ts).
    const route = TRIGGERS.find((t) => t.name === name)!.statusRoute!
    const res = await client.get(route, undefined, { priority: 'trigger', signal: options.signal })
    const status = parseCalendarStatus(res.data)
    store.recordRead(name, { ...status, raw: JSON.stringify(res.data) }, checkedAt)
    return status
  } catch (err) {
    // Keep the last known values; record only why this read failed.
    store.recordError(name, describeError(err), checkedAt)
    return undefined
  }
}
