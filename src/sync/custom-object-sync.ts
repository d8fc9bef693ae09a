// Custom objects: discovery, schemas (views follow them), and the records of every known object
// through the id-ordered cursor walk with `updated_since`. The bookmark for the next walk is the
// time this walk began minus a margin (the list is not a snapshot: see custom-object-cursor.ts),
// and a walk interrupted mid-way resumes from its page cursor with the same bookmark.
import { z } from 'zod'
import {
  clientFieldRow,
  clientFieldsTable,
  customObjects,
  customRecordToRow,
  toDiscoveryItem,
  toSchema,
} from '../../connectors/custom-objects.js'
import { customObjectCursor } from '../api/custom-object-cursor.js'
import { extractRows } from '../api/page-rows.js'
import { CustomObjectTypes } from '../store/custom-object-types.js'
import type { RecordRow } from '../model/rows.js'
import { RecordWriter } from '../store/record-writer.js'
import { isoNow, parseInstant } from '../model/timestamps.js'
import type { CountingSource } from './counting-source.js'
import { resumeCursor } from './resume-cursor.js'
import { deletionGuard, trackedRun } from './tracked-run.js'
import type { RunResult, SyncContext } from './sync-context.js'

const instant = z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time')

/** The stored cursor of `objects:<slug>`; read back through this schema. */
export const ObjectCursorSchema = z
  .object({
    /** `updated_since` of the walk (absent: the first, full walk). */
    updatedSince: instant.optional(),
    /** Set while a walk is under way: where to go on, and the bookmark it will leave. */
    next: z.string().min(1).optional(),
    bookmark: instant.optional(),
  })
  // Resuming a walk without its own bookmark would take a later one and miss what changed behind it.
  .refine((c) => c.next === undefined || c.bookmark !== undefined, {
    message: 'a walk under way (next) without its bookmark',
    path: ['bookmark'],
  })
export type ObjectCursor = z.infer<typeof ObjectCursorSchema>

/** Discovery and schemas: one request for the list, one per object. Returns the slugs to sync. */
export async function discoverObjects(
  ctx: SyncContext,
  source: CountingSource,
): Promise<{ slugs: string[]; disabled: string[]; changed: number }> {
  const types = new CustomObjectTypes(ctx.mirror.sqlite)
  let changed = 0
  const res = await source.get(customObjects.discoveryRoute, undefined, { priority: 'sweep', signal: ctx.signal })
  const items = extractRows(res, customObjects.discoveryRoute)
    .map(toDiscoveryItem)
    .filter((i) => i !== undefined)
  for (const item of items) {
    const schemaRes = await source.get(customObjects.schemaRoute(item.slug), undefined, { priority: 'sweep', signal: ctx.signal })
    const data = schemaRes.data
    const schema = toSchema(typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {})
    if (types.store(item, schema, isoNow(ctx.now())) && ++changed > 0)
      ctx.logger.info({ slug: item.slug, fields: schema.fields.length }, 'custom object schema stored; view rebuilt')
  }
  await storeClientFields(ctx, source)
  const found = new Set(items.map((i) => i.slug))
  const disabled: string[] = []
  for (const t of types.all()) {
    if (!found.has(t.slug)) {
      if (types.disable(t.slug, isoNow(ctx.now())))
        ctx.logger.warn({ slug: t.slug }, 'custom object no longer discovered: marked disabled, its records are still synced')
      disabled.push(t.slug)
    }
  }
  return { slugs: [...found, ...disabled].sort(), disabled, changed }
}

export function sweepObjectRecords(
  ctx: SyncContext,
  slug: string,
  source: CountingSource,
  options: { full?: boolean } = {},
): Promise<RunResult> {
  const stream = `${customObjects.name}:${slug}`
  return trackedRun(
    ctx,
    'sweep',
    stream,
    async ({ committed, runId }) => {
      const writer = new RecordWriter(ctx.mirror.sqlite, customObjects.table, { scope: { column: 'slug', value: slug } })
      // An unreadable cursor restarts with a full walk (no updated_since): webhooks write
      // custom_records too, so no bookmark can be derived from the table. Newer wins on re-reads.
      const resumed = options.full === true ? { cursor: undefined } : resumeCursor(ctx, stream, runId, ObjectCursorSchema, 'a full walk')
      const stored: ObjectCursor = resumed.cursor ?? {}
      const commit = ctx.mirror.sqlite.transaction((rows: RecordRow[], cursor: ObjectCursor, observedAt: string) => {
        const now = isoNow(ctx.now())
        const { changed } = writer.upsert(rows, { now, observedAt, replaceTies: true })
        ctx.state.setCursor(stream, cursor, now)
        return changed.length
      })
      let bookmark = stored.next !== undefined ? stored.bookmark : undefined
      for await (const page of customObjectCursor(source, slug, {
        updatedSince: stored.updatedSince,
        limit: ctx.options.pageSize,
        priority: stored.updatedSince === undefined ? 'reconcile' : 'sweep',
        ...(stored.next === undefined ? {} : { startCursor: stored.next }),
        ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
      })) {
        bookmark ??= page.bookmark
        // Mid-walk the cursor keeps the walk's own bookmark; the last page hands it on.
        const cursor: ObjectCursor =
          page.next === null
            ? { updatedSince: bookmark }
            : { ...(stored.updatedSince === undefined ? {} : { updatedSince: stored.updatedSince }), next: page.next, bookmark }
        committed.rows += commit(
          page.rows.map((r) => customRecordToRow(r)),
          cursor,
          isoNow(source.lastStartedAt),
        )
      }
      return { rows: committed.rows, ...(resumed.cursorReset === undefined ? {} : { details: { cursorReset: resumed.cursorReset } }) }
    },
    source,
  )
}

/**
 * Deleted custom records: the id-ordered cursor walk is stable under concurrent writes (ids only
 * grow and a record keeps its place), so a record the full walk does not meet is gone and needs no
 * confirming GET. The same share guard as for records applies.
 */
export function reconcileObjectRecords(ctx: SyncContext, slug: string, source: CountingSource): Promise<RunResult> {
  const stream = `${customObjects.name}:${slug}`
  return trackedRun(
    ctx,
    'reconcile',
    stream,
    async () => {
      const writer = new RecordWriter(ctx.mirror.sqlite, customObjects.table, { scope: { column: 'slug', value: slug } })
      const walkStartedAt = isoNow(ctx.now())
      const seen = new Set<string>()
      for await (const page of customObjectCursor(source, slug, {
        limit: ctx.options.pageSize,
        priority: 'reconcile',
        ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
      })) {
        for (const r of page.rows) if (typeof r.id === 'string') seen.add(r.id)
      }
      const live = ctx.mirror.sqlite
        .prepare(`SELECT id FROM custom_records WHERE slug = ? AND deleted_at IS NULL AND synced_at < ?`)
        .pluck()
        .all(slug, walkStartedAt) as string[]
      const liveCount = ctx.mirror.sqlite
        .prepare(`SELECT count(*) FROM custom_records WHERE slug = ? AND deleted_at IS NULL`)
        .pluck()
        .get(slug) as number
      const gone = live.filter((id) => !seen.has(id))
      const guarded = deletionGuard(stream, gone.length, liveCount, ctx.options.maxDeleteShare)
      if (guarded !== undefined) return guarded
      const marked = ctx.mirror.sqlite.transaction(() => writer.markDeleted(gone, isoNow(ctx.now())).changed.length)()
      return { rows: marked, details: { walked: seen.size } }
    },
    source,
  )
}

/**
 * The client schema (the one built-in module the schema route accepts) names the field ids behind
 * clients.properties; they feed the client_properties view. Replaced whole on every discovery.
 */
async function storeClientFields(ctx: SyncContext, source: CountingSource): Promise<void> {
  const res = await source.get(customObjects.schemaRoute('client'), undefined, { priority: 'sweep', signal: ctx.signal })
  const data = res.data
  const rows = (
    typeof data === 'object' && data !== null && Array.isArray((data as { fields?: unknown }).fields)
      ? (data as { fields: unknown[] }).fields
      : []
  )
    .map((f) => (typeof f === 'object' && f !== null && !Array.isArray(f) ? clientFieldRow(f as Record<string, unknown>) : undefined))
    .filter((r) => r !== undefined)
  const now = isoNow(ctx.now())
  const table = `"${clientFieldsTable.name}"`
  const names = clientFieldsTable.columns.map((c) => c.name)
  const insert = ctx.mirror.sqlite.prepare(
    `INSERT INTO ${table} (${names.map((n) => `"${n}"`).join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`,
  )
  ctx.mirror.sqlite.transaction(() => {
    ctx.mirror.sqlite.prepare(`DELETE FROM ${table}`).run()
    for (const r of rows) insert.run({ ...r, synced_at: now })
  })()
}
