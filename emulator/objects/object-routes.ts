// Custom-object routes (spec: Endpoints, Custom objects): discovery, schema, the id-ordered
// cursor list with its filters, get, create (201), PATCH merge and upsert by field.
import { Collection, type Doc } from '../core/collection.js'
import { badRequest, conflict, HttpError } from '../core/http-error.js'
import { parseInstant } from '../core/iso-time.js'
import { OBJECT_ID } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import { BUILT_IN_MODULES } from '../data/account-config.js'
import type { RouteDef } from '../http/router.js'
import { localeOf } from './data-validation.js'
import type { ObjectDef } from './object-definitions.js'
import { createRecord, parseRecordWrite, updateRecord, type ObjectRecord } from './object-writes.js'
import { mirrorKey } from './record-data.js'

const RESERVED = ['limit', 'cursor', 'updated_since', 'stage', 'status']

const builtInError = (slug: string): HttpError =>
  badRequest(`'${slug}' is a built-in module, not a custom object. Use /api/v1/${slug}s instead.`)

const recordNotFound = (): HttpError => new HttpError(404, 'Record not found.', 'NOT_FOUND')

function resolve(ctx: EmulatorContext, slug: string | undefined): { def: ObjectDef; coll: Collection<ObjectRecord['internal']> } {
  const s = slug ?? ''
  if ((BUILT_IN_MODULES as readonly string[]).includes(s)) throw builtInError(s)
  const def = ctx.state.objectDefs.find((d) => d.slug === s)
  const coll = ctx.state.objects.get(s)
  if (def === undefined || coll === undefined) throw new HttpError(404, `No object with slug '${s}' on this account.`, 'NOT_FOUND')
  // The v1 routes see the cached field definitions (up to five minutes old) and the live pipeline.
  return { def: ctx.state.schemaCache.view(def, ctx.clock.now()), coll }
}

export function schemaView(def: ObjectDef): Doc {
  return {
    object: { slug: def.slug, nameSingular: def.nameSingular, namePlural: def.namePlural },
    fields: def.fields.map((f) => ({
      name: f.name,
      id: f.id,
      label: f.label,
      type: f.type,
      required: f.required,
      readOnly: f.readOnly,
      system: f.system,
      options: f.options,
      relation: f.relation,
    })),
    pipeline: def.pipeline,
  }
}

function listRecords(ctx: EmulatorContext, slug: string | undefined, q: URLSearchParams): string {
  const { def, coll } = resolve(ctx, slug)
  const rawLimit = Number.parseInt(q.get('limit') ?? '', 10)
  const limit = Number.isNaN(rawLimit) ? 50 : Math.min(100, Math.max(1, rawLimit))
  const cursor = q.get('cursor')
  if (cursor !== null && !OBJECT_ID.test(cursor)) {
    throw badRequest(`Invalid cursor "${cursor}". Pass paging.next_cursor from the previous page unchanged.`)
  }
  const since = q.get('updated_since')
  // An unparseable updated_since is ignored (spec): everything is returned.
  const sinceMs = since === null || since === '' ? null : parseInstant(since)
  const stage = q.get('stage') ?? q.get('status')
  const known = new Set([...def.fields.map((f) => f.name), ...def.fields.map(mirrorKey).filter((k): k is string => k !== null), 'customId'])
  const filters: [string, string][] = []
  const unknown: string[] = []
  for (const [key, value] of q) {
    if (RESERVED.includes(key) || value === '') continue
    if (known.has(key)) filters.push([key, value])
    else unknown.push(key)
  }
  if (unknown.length > 0)
    throw badRequest(`Unknown filter field(s): ${unknown.join(', ')}. Read GET /api/v1/objects/${def.slug}/schema for the field names.`)
  const rows = coll.sorted('id', 'asc').filter((r) => {
    if (cursor !== null && r.id <= cursor.toLowerCase()) return false
    if (sinceMs !== null && r.updatedMs < sinceMs) return false
    if (stage !== null && stage !== '' && r.doc.stage !== stage) return false
    const data = r.doc.data as Doc
    return filters.every(([k, v]) => {
      const d = data[k]
      return Array.isArray(d)
        ? d.some((x) => x === v || (typeof x === 'number' && String(x) === v))
        : d === v || ((typeof d === 'number' || typeof d === 'boolean') && String(d) === v)
    })
  })
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  const next = rows.length > limit && last !== undefined ? { cursor: last.id, limit } : null
  return `{"success":true,"data":[${page.map((r) => Collection.json(r)).join(',')}],"meta":${JSON.stringify({ next })}}`
}

export function objectRoutes(ctx: EmulatorContext): RouteDef[] {
  const one = (rec: ObjectRecord, status = 200, meta?: Doc) => ({
    status,
    body: `{"success":true,"data":${Collection.json(rec)}${meta === undefined ? '' : `,"meta":${JSON.stringify(meta)}`}}`,
  })
  return [
    {
      method: 'GET',
      path: '/api/v1/objects',
      family: 'v1',
      scope: 'objects:read',
      handler: () => {
        // Disabled objects are omitted here (their records stay readable and writable).
        const data = ctx.state.objectDefs
          .filter((d) => d.enabled)
          .sort((a, b) => (a.slug < b.slug ? -1 : 1))
          .map((d) => ({
            slug: d.slug,
            nameSingular: d.nameSingular,
            namePlural: d.namePlural,
            isChildObject: d.isChildObject,
            parentObjectSlug: d.parentObjectSlug,
            schemaUrl: `/api/v1/objects/${d.slug}/schema`,
          }))
        return { body: { success: true, data, meta: { total: data.length } } }
      },
    },
    {
      method: 'GET',
      path: '/api/v1/objects/:slug/schema',
      family: 'v1',
      scope: 'objects:read',
      // `client` is accepted here: the way to learn client custom-field ids.
      handler: (req) => ({
        body: {
          success: true,
          data: schemaView(
            req.params.slug === 'client'
              ? ctx.state.schemaCache.view(ctx.state.clientSchema, ctx.clock.now())
              : resolve(ctx, req.params.slug).def,
          ),
        },
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/objects/:slug',
      family: 'v1',
      scope: 'objects:read',
      handler: (req) => ({ body: listRecords(ctx, req.params.slug, req.query) }),
    },
    {
      method: 'GET',
      path: '/api/v1/objects/:slug/:id',
      family: 'v1',
      scope: 'objects:read',
      // The slug is not verified here: an unknown one gives `Record not found.`
      handler: (req) => {
        const rec = ctx.state.objects.get(req.params.slug ?? '')?.live(req.params.id ?? '')
        if (rec === undefined) throw recordNotFound()
        return one(rec)
      },
    },
    {
      method: 'POST',
      path: '/api/v1/objects/:slug',
      family: 'v1',
      scope: 'objects:write',
      handler: (req) => {
        const { def } = resolve(ctx, req.params.slug)
        const locale = localeOf(req.headers['accept-language'])
        return one(createRecord(ctx, def, parseRecordWrite(ctx, def, req.body, 'create', locale), 'api', locale), 201)
      },
    },
    {
      method: 'PATCH',
      path: '/api/v1/objects/:slug/:id',
      family: 'v1',
      scope: 'objects:write',
      handler: (req) => {
        const { def, coll } = resolve(ctx, req.params.slug)
        const rec = coll.live(req.params.id ?? '')
        if (rec === undefined) throw recordNotFound()
        const locale = localeOf(req.headers['accept-language'])
        updateRecord(ctx, def, rec, parseRecordWrite(ctx, def, req.body, 'update', locale), 'api', locale)
        return one(rec)
      },
    },
    {
      method: 'PUT',
      path: '/api/v1/objects/:slug/by/:field/:value',
      family: 'v1',
      scope: 'objects:write',
      handler: (req) => {
        const { def, coll } = resolve(ctx, req.params.slug)
        const field = req.params.field ?? ''
        const value = req.params.value ?? ''
        if (!def.fields.some((f) => f.name === field)) throw badRequest(`Unknown field(s) in data: ${field}`)
        const locale = localeOf(req.headers['accept-language'])
        const w = parseRecordWrite(ctx, def, req.body, 'upsert', locale)
        // Exact string comparison: a number or boolean value never matches. Soft-deleted holders are ignored.
        const matches = coll.all().filter((r) => !r.deleted && (r.doc.data as Doc)[field] === value)
        if (matches.length > 1) throw conflict('upsert key matched more than one record')
        const found = matches[0]
        if (found !== undefined) {
          updateRecord(ctx, def, found, w, 'api', locale)
          return one(found, 200, { created: false })
        }
        const created = createRecord(ctx, def, { ...w, data: { ...w.data, [field]: value } }, 'api', locale)
        return one(created, 201, { created: true })
      },
    },
  ]
}
