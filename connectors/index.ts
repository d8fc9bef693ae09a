// The stream registry: every stream fsm-sync runs, declared once, in the order a full sync runs
// them (record streams parents first, then reference data, account metadata and custom objects;
// the calendar feed and the integration triggers run on their own schedules). Everything else is
// derived from it: the selection of the config's `streams`, the webhook routes, `status`, and every
// table that holds the account's data.
import type { TableSpec } from '../src/model/table-spec.js'
import type { RecordStream, StreamDeclaration } from '../src/model/streams.js'
import { clients } from './clients.js'
import { jobs } from './jobs.js'
import { visits } from './visits.js'
import { invoices } from './invoices.js'
import { REFERENCE_STREAMS } from './reference.js'
import { apiKeyMetadata, webhooks } from './account-metadata.js'
import { clientPropertiesView, customObjects } from './custom-objects.js'
import { calendarFeed, TRIGGERS } from './integrations.js'

export { clients, jobs, visits, invoices }

export const STREAMS: readonly StreamDeclaration[] = [
  clients,
  jobs,
  visits,
  invoices,
  ...REFERENCE_STREAMS,
  webhooks,
  apiKeyMetadata,
  customObjects,
  calendarFeed,
  ...TRIGGERS,
]

export const RECORD_STREAMS: readonly RecordStream[] = STREAMS.filter((s): s is RecordStream => s.kind === 'records')

/**
 * The fixed views over the account's data (each custom object's `obj_<slug>` view is generated from
 * its schema at run time: src/store/repositories/custom-object-views.ts).
 */
export const DATA_VIEWS: readonly TableSpec[] = [clientPropertiesView]

/** Every table of the account's data (role `data`), parents before children, each once. */
export const DATA_TABLES: readonly TableSpec[] = [...new Map(STREAMS.flatMap((s) => s.tables).map((t) => [t.name, t])).values()]
