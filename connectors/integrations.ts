// Integrations (spec: Integrations): the calendar change feed read after each calendar-a trigger,
// and the last status read of each calendar. The feed's record keys are "not shown" in the spec,
// so each column names the spellings read, and `raw` keeps the record whole.
import type { FeedStream, TriggerStream } from '../src/model/streams.js'
import { col, type MappedTable } from './columns.js'

/** calendar-a's change feed, one row per change record read. */
export const calendarChangesTable: MappedTable = {
  name: 'calendar_changes',
  description: "A change record read from a calendar integration's change feed; re-reads of an overlapping window insert nothing twice.",
  role: 'data',
  primaryKey: ['integration', 'change_key'],
  // Re-reads insert nothing twice, and retention removes the rows fetched longest ago.
  appendedBy: 'fetched_at',
  columns: [
    col('integration', 'text', undefined, 'The integration whose feed the change came from (calendar-a).', { nullable: false }),
    col(
      'change_key',
      'text',
      undefined,
      'The external event id and the change time, or sha256 of raw when either is missing: one row per change.',
      { nullable: false },
    ),
    col('action', 'text', 'action|type|op|operation|change', 'What changed (created, updated, deleted, ...).'),
    col('visit_id', 'text', 'visitId|visit_id|visit.id', 'The visit the change concerns (visits.id), when it names one.'),
    col(
      'external_event_id',
      'text',
      'externalEventId|external_event_id|eventId|event_id|externalId|external_id',
      "The calendar's own event id.",
    ),
    col('changed_at', 'time', 'changedAt|changed_at|updatedAt|updated_at|timestamp|syncedAt|createdAt', 'When the change happened.'),
    col('raw', 'json', undefined, 'The change record as received, as JSON text.', { nullable: false }),
    col('fetched_at', 'time', undefined, 'When fsm-sync read the change.', { nullable: false }),
  ],
}

/** The last status read of each calendar integration. */
export const integrationStatusTable: MappedTable = {
  name: 'integration_status',
  description: 'The last status read of a calendar integration; a failed read keeps the last values and records why in error.',
  role: 'data',
  primaryKey: ['name'],
  columns: [
    col('name', 'text', undefined, 'The integration (calendar-a).', { nullable: false }),
    col('connected', 'flag', 'connected', 'The calendar is connected.'),
    col('email', 'text', 'email', 'The calendar account email.'),
    col('last_sync_at', 'time', 'lastSyncAt', 'When the integration last synced, as it reports.'),
    col('calendar_id', 'text', 'calendarId', 'The calendar id.'),
    col('error', 'text', undefined, 'Why the last read failed; NULL after a successful one.'),
    col('raw', 'json', undefined, 'The status as received, as JSON text.'),
    col('checked_at', 'time', undefined, 'When fsm-sync last read the status.', { nullable: false }),
  ],
}

/** calendar-a's change feed, read after each calendar-a trigger that ran. */
export const calendarFeed: FeedStream = {
  kind: 'feed',
  name: calendarChangesTable.name,
  route: '/api/v1/integrations/calendar-a/sync',
  integration: 'calendar-a',
  table: calendarChangesTable.name,
  tables: [calendarChangesTable],
}

const trigger = <Name extends string>(name: Name, statusTable = false): TriggerStream & { readonly name: Name } => ({
  kind: 'trigger',
  name,
  route: `/api/v1/integrations/${name}/sync`,
  ...(statusTable ? { statusRoute: `/api/v1/integrations/${name}/status` } : {}),
  tables: statusTable ? [integrationStatusTable] : [],
})

/** The integration triggers; only calendar-a documents a status route. */
export const TRIGGERS = [trigger('calendar-a', true), trigger('calendar-b'), trigger('accounting')] as const
