// Custom objects: discovery, schemas (views follow them), and the records of every known object
// through the id-ordered cursor walk with `updated_since`. The bookmark for the next walk is the
// time this walk began minus a margin (the list is not a snapshot: see custom-object-cursor.ts),
// and a walk interrupted mid-way resumes from its page cursor with the same bookmark. Schemas are
// fetched only when due (object-schemas.ts).
import { z } from 'zod'
import { clientFieldRow, customObjects, customRecordToRow, toDiscoveryItem, toSchema } from '../../connectors/custom-objects.js'
import type { DiscoveryItem } from '../model/custom-objects.js'
import { obj } from '../../connectors/mapping.js'
import { customObjectCursor } from '../api/custom-object-cursor.js'
import { extractRows } from '../api/page-rows.js'
import { replaceClientFields } from '../store/repositories/client-fields.js'
import { CustomObjectTypes } from '../store/repositories/custom-object-types.js'
import { MAX_VIEW_FIELDS, viewWidthNote } from '../store/repositories/custom-object-views.js'
import type { RecordRow } from '../model/rows.js'
import { RecordTable } from '../store/repositories/record-tables.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { isoNow, parseInstant } from '../model/timestamps.js'
import { objectStream } from '../model/streams.js'
import type { CountingSource } from './counting-source.js'
import { CLIENT_SCHEMA, readSchemaTimes, recordSchemaFetch, schemaDue, unknownToSchema } from './object-schemas.js'
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

export interface Discovered {
  slugs: string[]
  disabled: string[]
  /** Schemas stored that differ from the copy before. */
  changed: number
  /** Schemas fetched by this discovery. */
  fetched: number
  /** The discovery items of the objects discovered, by slug. */
  items: Map<string, DiscoveryItem>
}

/**
 * Discovery (one request) and the schemas that are due (object-schemas.ts): one request each.
 * `full` fetches every schema. Returns the slugs to sync.
 */
export async function discoverObjects(ctx: SyncContext, source: CountingSource, options: { full?: boolean } = {}): Promise<Discovered> {
  const types = new CustomObjectTypes(ctx.mirror.sqlite)
  let changed = 0
  let fetched = 0
  const res = await source.get(customObjects.discoveryRoute, undefined, { priority: 'sweep', signal: ctx.signal })
  const items = extractRows(res, customObjects.discoveryRoute)
    .map(toDiscoveryItem)
    .filter((i) => i !== undefined)
  const stored = new Map(types.all().map((t) => [t.slug, t]))
  const times = readSchemaTimes(ctx)
  for (const item of items) {
    const known = stored.get(item.slug)
    const seen = { item, stored: known !== undefined, disabled: known?.disabledAt != null }
    if (options.full !== true && !schemaDue(times, item.slug, ctx.now(), seen)) continue
    fetched++
    if (await fetchSchema(ctx, source, types, item)) changed++
  }
  if (options.full === true || schemaDue(times, CLIENT_SCHEMA, ctx.now(), { stored: true, disabled: false })) {
    fetched++
    await storeClientFields(ctx, source)
    recordSchemaFetch(ctx, CLIENT_SCHEMA, undefined)
  }
  const found = new Set(items.map((i) => i.slug))
  const disabled: string[] = []
  for (const t of types.all()) {
    if (!found.has(t.slug)) {
      if (types.disable(t.slug, isoNow(ctx.now())))
        ctx.logger.warn({ slug: t.slug }, 'custom object no longer discovered: marked disabled, its records are still synced')
      disabled.push(t.slug)
    }
  }
  return { slugs: [...found, ...disabled].sort(), disabled, changed, fetched, items: new Map(items.map((i) => [i.slug, i])) }
}

/** Fetches and stores one schema (the view is rebuilt when it changed); returns whether it changed. */
async function fetchSchema(ctx: SyncContext, source: CountingSource, types: CustomObjectTypes, item: DiscoveryItem): Promise<boolean> {
  const schemaRes = await source.get(customObjects.schemaRoute(item.slug), undefined, { priority: 'sweep', signal: ctx.signal })
  const data = schemaRes.data
  const schema = toSchema(typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {})
  const changed = types.store(item, schema, isoNow(ctx.now()))
  recordSchemaFetch(ctx, item.slug, item)
  if (changed) ctx.logger.info({ slug: item.slug, fields: schema.fields.length }, 'custom object schema stored; view rebuilt')
  const narrowed = changed ? viewWidthNote(item.slug, schema.fields.length) : undefined
  if (narrowed !== undefined) ctx.logger.warn({ slug: item.slug, fields: schema.fields.length, columns: MAX_VIEW_FIELDS }, narrowed)
  return changed
}

export function sweepObjectRecords(
  ctx: SyncContext,
  slug: string,
  source: CountingSource,
  /** `maxPages`: as for record sweeps (record-sweep.ts), each page's `next` being committed with it. */
  options: { full?: boolean; discovery?: DiscoveryItem; maxPages?: number } = {},
): Promise<RunResult> {
  const stream = objectStream(slug)
  return trackedRun(
    ctx,
    'sweep',
    stream,
    async (scope) => {
      const { committed, runId } = scope
      const writer = new RecordWriter(ctx.mirror.sqlite, customObjects.table, { scope: { column: 'slug', value: slug } })
      // An unreadable cursor restarts with a full walk (no updated_since): webhooks write
      // custom_records too, so no bookmark can be derived from the table. Newer wins on re-reads.
      const resumed = options.full === true ? { cursor: undefined } : resumeCursor(ctx, stream, runId, ObjectCursorSchema, 'a full walk')
      const stored: ObjectCursor = resumed.cursor ?? {}
      const commit = ctx.mirror.sqlite.transaction((rows: RecordRow[], cursor: ObjectCursor, observedAt: string) => {
        runId()
        const now = isoNow(ctx.now())
        const { changed } = writer.upsert(rows, { now, observedAt, replaceTies: true })
        ctx.state.setCursor(stream, cursor, now)
        return changed.length
      })
      let bookmark = stored.next !== undefined ? stored.bookmark : undefined
      // What the records read carry that the stored schema does not know, written after it was fetched.
      const types = new CustomObjectTypes(ctx.mirror.sqlite)
      const type = types.all().find((t) => t.slug === slug)
      const fetchedAt = parseInstant(readSchemaTimes(ctx).schemas[slug]?.fetchedAt ?? '')
      const unknown = new Set<string>()
      let pages = 0
      let capped = false
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
        const rows = page.rows.map((r) => customRecordToRow(r))
        // As for record sweeps (record-sweep.ts): a page without rows leaves its cursor to the next commit.
        scope.deferred = undefined
        if (rows.length > 0) committed.rows += commit(rows, cursor, isoNow(source.lastStartedAt))
        else {
          const at = isoNow(ctx.now())
          scope.deferred = () => ctx.state.setCursor(stream, cursor, at)
        }
        for (const r of type === undefined ? [] : page.rows) {
          const updated = parseInstant(typeof r.updatedAt === 'string' ? r.updatedAt : '')
          if (Number.isNaN(fetchedAt) || !(updated <= fetchedAt))
            for (const k of unknownToSchema(type!.fields, type!.pipeline, obj(r.data))) unknown.add(k)
        }
        if (++pages >= (options.maxPages ?? Infinity) && page.next !== null) {
          capped = true
          break
        }
      }
      // One request for the schema, once per sweep, when a record needs it (object-schemas.ts).
      if (unknown.size > 0 && options.discovery !== undefined) {
        ctx.logger.info(
          { slug, unknown: [...unknown].slice(0, 10) },
          'records carry what the stored schema does not know: fetching the schema',
        )
        await fetchSchema(ctx, source, types, options.discovery)
      }
      const details = {
        ...(resumed.cursorReset === undefined ? {} : { cursorReset: resumed.cursorReset }),
        ...(capped ? { capped: true } : {}),
      }
      return { rows: committed.rows, ...(Object.keys(details).length === 0 ? {} : { details }) }
    },
    { source, rowAtFirstCommit: true },
  )
}

/**
 * Deleted custom records: the id-ordered cursor walk is stable under concurrent writes (ids only
 * grow and a record keeps its place), so a record the full walk does not meet is gone and needs no
 * confirming GET. The same share guard as for records applies.
 */
export function reconcileObjectRecords(ctx: SyncContext, slug: string, source: CountingSource): Promise<RunResult> {
  const stream = objectStream(slug)
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
      const table = new RecordTable(ctx.mirror.sqlite, customObjects.table, { scope: { column: 'slug', value: slug } })
      const live = table.liveIds({ syncedBefore: walkStartedAt })
      const liveCount = table.liveCount()
      const gone = live.filter((id) => !seen.has(id))
      const guarded = deletionGuard(stream, gone.length, liveCount, ctx.options.maxDeleteShare, seen.size)
      if (guarded !== undefined) return guarded
      const marked = ctx.mirror.sqlite.transaction(() => writer.markDeleted(gone, isoNow(ctx.now())).changed.length)()
      return { rows: marked, details: { walked: seen.size } }
    },
    { source },
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
  replaceClientFields(ctx.mirror.sqlite, rows, isoNow(ctx.now()))
}
