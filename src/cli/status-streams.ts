// What `fsm-sync status` counts for each stream, derived from the registry: the table a stream's
// rows land in (its first declared table); every stream with a table of its own is listed, even
// before its first run (the snapshot streams included).
import { customObjects, customRecordsTable } from '../../connectors/custom-objects.js'
import { STREAMS } from '../../connectors/index.js'
import type { StatusStreams } from '../store/read-models/status-report.js'

export const STATUS_STREAMS: StatusStreams = {
  tables: new Map(
    STREAMS.filter((s) => s.kind === 'records' || s.kind === 'reference' || s.kind === 'metadata' || s.kind === 'feed').map((s) => [
      s.name,
      { table: s.tables[0].name, tombstones: s.kind !== 'feed' },
    ]),
  ),
  always: STREAMS.filter((s) => s.kind === 'records' || s.kind === 'reference' || s.kind === 'metadata').map((s) => s.name),
  // The slug is the first key column of custom_records.
  perObject: { stream: customObjects.name, table: customRecordsTable.name, scope: customRecordsTable.primaryKey[0]! },
}
