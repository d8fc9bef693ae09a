// Every connector, in the order a full sync runs them (parents before children), and every table
// that holds the account's data, as declared by the connectors.
import type { TableSpec } from '../src/model/table-spec.js'
import { clients } from './clients.js'
import { jobs } from './jobs.js'
import { visits } from './visits.js'
import { invoices } from './invoices.js'
import { REFERENCE_STREAMS } from './reference.js'
import { apiKeys, webhookDeliveries, webhookEndpoints } from './account-metadata.js'
import { clientFieldsTable, customObjectTypesTable, customRecordsTable } from './custom-objects.js'
import { calendarChangesTable, integrationStatusTable } from './integrations.js'
import type { RecordStream } from './define-stream.js'

export { clients, jobs, visits, invoices }
export type { RecordStream } from './define-stream.js'
export const RECORD_STREAMS: readonly RecordStream[] = [clients, jobs, visits, invoices]

/** Every table of the account's data (role `data`), parents before children. */
export const DATA_TABLES: readonly TableSpec[] = [
  ...RECORD_STREAMS.flatMap((s) => s.tables),
  ...REFERENCE_STREAMS.flatMap((s) => s.tables),
  ...[webhookEndpoints, webhookDeliveries, apiKeys].flatMap((s) => s.tables),
  customObjectTypesTable,
  customRecordsTable,
  clientFieldsTable,
  calendarChangesTable,
  integrationStatusTable,
]
