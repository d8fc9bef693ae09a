// Applies `object.*` deliveries to custom_records (spec, Events: the four object events are generic
// across custom objects and carry the slug in `object`). Snapshots go through the same scoped
// newer-wins writer as the cursor walk; `object.deleted` carries only `{id}` (every *.deleted
// does), so its slug is looked up in the mirror by id.
import { customObjects, customRecordToRow } from '../../connectors/custom-objects.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { customRecordSlugs } from '../store/repositories/record-tables.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import type { ObjectSink } from './delivery-applier.js'

export function customObjectSink(sqlite: Sqlite): ObjectSink {
  const writers = new Map<string, RecordWriter>()
  const writerFor = (slug: string) => {
    let w = writers.get(slug)
    if (w === undefined) writers.set(slug, (w = new RecordWriter(sqlite, customObjects.table, { scope: { column: 'slug', value: slug } })))
    return w
  }
  const slugsOf = customRecordSlugs(sqlite)
  return {
    apply(event, payload, now, selected = () => true) {
      const id = payload.id
      if (typeof id !== 'string' || id === '') throw new Error(`${event} without an id`)
      const named = typeof payload.object === 'string' && payload.object !== '' ? payload.object : undefined
      if (event === 'object.deleted') {
        const slugs = named !== undefined ? [named] : slugsOf(id)
        // A record never mirrored has no slug to file a tombstone under: nothing to mark; the next
        // reconciliation settles it either way.
        const mine = slugs.filter(selected)
        for (const slug of mine) writerFor(slug).markDeleted([id], now)
        return slugs.length === 0 || mine.length > 0
      }
      if (named === undefined) throw new Error(`${event} for record ${id} carries no 'object' slug`)
      if (!selected(named)) return false
      writerFor(named).upsert([customRecordToRow(payload)], { now, replaceTies: false })
      return true
    },
  }
}
