// What `fsm-sync status` counts for each stream, derived from the registry: the table a stream's
// rows land in (its first declared table), and the record streams, listed even before their first run.
import type { StatusStreams } from '../src/model/streams.js'
import { customObjects, customRecordsTable } from './custom-objects.js'
import { STREAMS } from './index.js'

export const STATUS_STREAMS: StatusStreams = {
  tables: new Map(
    STREAMS.filter((s) => s.kind === 'records' || s.kind === 'reference' || s.kind === 'metadata' || s.kind === 'feed').map((s) => [
      s.name,
      { table: s.tables[0].name, tombstones: s.kind !== 'feed' },
    ]),
  ),
  always: STREAMS.filter((s) => s.kind === 'records').map((s) => s.name),
  // The slug is the first key column of custom_records.
  perObject: { stream: customObjects.name, table: customRecordsTable.name, scope: customRecordsTable.primaryKey[0]! },
}
