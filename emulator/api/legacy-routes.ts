// Legacy routes (spec: Legacy routes; Versioning 2-4): Bearer only, no scopes, and the body shapes
// differ on purpose: items carry `_id`, taxes and team members `id`, job forms `recordId`; the
// team list is `data.team`, taxes `data.taxes`, items and job forms a bare `data` array. The frozen
// `/api/clients` and `/api/jobs` lists ignore `since` and every filter.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { asObject } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import type { FormPart } from '../http/multipart.js'
import type { RouteDef } from '../http/router.js'
import { createJob } from './jobs.js'
import { parseJobInput } from './job-input.js'

const CURRENCIES = [
  { code: 'USD', symbol: '$', name: 'US Dollar' },
  { code: 'CAD', symbol: '$', name: 'Canadian Dollar' },
  { code: 'EUR', symbol: '€', name: 'Euro' },
  { code: 'GBP', symbol: '£', name: 'Pound Sterling' },
  { code: 'AUD', symbol: '$', name: 'Australian Dollar' },
]

const live = <I>(c: Collection<I>): StoredRecord<I>[] => c.all().filter((r) => !r.deleted)
const rows = <I>(c: Collection<I>): string =>
  `[${live(c)
    .map((r) => Collection.json(r))
    .join(',')}]`

/** A v1 document re-keyed with `_id` first, as the frozen routes return it. */
function underscored(doc: Doc): Doc {
  const { id, ...rest } = doc
  return { _id: id, ...rest }
}

/**
 * Team paging (spec: Legacy routes, `/api/teams`; Limits, "Team listing page size: -1 for all,
 * maximum 500; page 1–10000"). The parameter names are not shown in the spec: the emulator reads
 * `page` and `limit`. No `limit` (or -1) lists everyone; above 500 is clamped; a page outside
 * 1–10000 or another limit gives 400.
 */
function teamPage(q: URLSearchParams, members: string[]): string[] {
  const page = q.get('page') === null || q.get('page') === '' ? 1 : Number(q.get('page'))
  if (!Number.isInteger(page) || page < 1 || page > 10_000) throw badRequest("'page' must be an integer from 1 to 10000")
  const limit = q.get('limit') === null || q.get('limit') === '' ? -1 : Number(q.get('limit'))
  if (!Number.isInteger(limit) || (limit < 1 && limit !== -1))
    throw badRequest("'limit' must be -1 (all) or a positive integer (at most 500)")
  if (limit === -1) return page === 1 ? members : []
  const size = Math.min(limit, 500)
  return members.slice((page - 1) * size, page * size)
}

const JOB_FORM = 'a jobData part holding the job as JSON, and an optional notes text part'

/**
 * The legacy job create (spec: Versioning 2, "multipart form data (`jobData` plus notes)"). Emulator
 * assumptions (README): `jobData` is checked against the v1 job create contract (the spec gives no
 * other; Job says a builder follows the current list); the notes arrive as one `notes` text part
 * stored as the job's `notes`; any other part name, a repeated part or a file-upload `notes` is 400.
 */
function legacyJobInput(body: unknown) {
  const parts = body as FormPart[]
  const byName = new Map<string, FormPart>()
  for (const p of parts) {
    if (p.name !== 'jobData' && p.name !== 'notes') throw badRequest(`Unknown form part '${p.name}': this route takes ${JOB_FORM}`)
    if (byName.has(p.name)) throw badRequest(`The '${p.name}' part is sent more than once`)
    byName.set(p.name, p)
  }
  const jobData = byName.get('jobData')
  if (jobData === undefined) throw badRequest(`The jobData part is missing: this route takes ${JOB_FORM}`)
  let job: unknown
  try {
    job = JSON.parse(jobData.data.toString('utf8'))
  } catch {
    throw badRequest('The jobData part is not valid JSON: it holds the job as a JSON object')
  }
  if (typeof job !== 'object' || job === null || Array.isArray(job)) throw badRequest('The jobData part must hold a JSON object (the job)')
  const input = parseJobInput(job, 'create')
  const notes = byName.get('notes')
  if (notes !== undefined) {
    if (notes.filename !== null) throw badRequest('The notes part is text, not a file upload (file attachments are not emulated)')
    const text = notes.data.toString('utf8')
    if (input.fields.notes !== undefined && input.fields.notes !== text)
      throw badRequest("The notes part and jobData's notes/internalNotes disagree; send one of them")
    input.fields.notes = text
  }
  return input
}

export function legacyRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  const company = (q: URLSearchParams): Doc => ({
    ...state.company,
    ...(q.get('withCurrencyData') === 'true' ? { currencies: CURRENCIES } : {}),
  })
  return [
    {
      method: 'GET',
      path: '/api/product-service',
      family: 'legacy',
      handler: () => ({ body: `{"success":true,"data":${rows(state.items)}}` }),
    },
    {
      method: 'POST',
      path: '/api/product-service',
      family: 'legacy',
      handler: (req) => {
        const b = asObject(req.body)
        if (typeof b.name !== 'string' || b.name.trim() === '') throw badRequest('name is required')
        if (b.type !== 'Service' && b.type !== 'Product') throw badRequest('type is required: Service or Product')
        if (typeof b.price !== 'number' || !Number.isFinite(b.price)) throw badRequest('price is required (a number)')
        if (b.description !== undefined && typeof b.description !== 'string') throw badRequest('description must be a string')
        if (b.isActive !== undefined && typeof b.isActive !== 'boolean') throw badRequest('isActive must be a boolean')
        const now = ctx.clock.now()
        const id = state.ids.make(now)
        // No de-duplication by name (spec: Legacy-route resources, Item).
        const doc = {
          _id: id,
          name: b.name,
          type: b.type,
          price: b.price,
          description: b.description ?? '',
          isActive: b.isActive ?? true,
          createdAt: iso(now),
          updatedAt: iso(now),
        }
        state.items.insert(id, doc, now, now, null)
        const { _id, ...rest } = doc
        return { body: { success: true, data: { id: _id, ...rest } } }
      },
    },
    {
      method: 'GET',
      path: '/api/teams',
      family: 'legacy',
      handler: (req) => {
        const members = live(state.team).map((r) => Collection.json(r))
        return { body: `{"success":true,"data":{"team":[${teamPage(req.query, members).join(',')}],"total":${members.length}}}` }
      },
    },
    { method: 'GET', path: '/api/team', family: 'legacy', handler: () => ({ body: `{"success":true,"data":${rows(state.team)}}` }) },
    {
      method: 'GET',
      path: '/api/taxes',
      family: 'legacy',
      handler: () => ({ body: `{"success":true,"data":{"taxes":${rows(state.taxes)}}}` }),
    },
    {
      method: 'GET',
      path: '/api/job-forms',
      family: 'legacy',
      handler: () => ({ body: `{"success":true,"data":${rows(state.jobForms)}}` }),
    },
    {
      method: 'GET',
      path: '/api/companyInfo',
      family: 'legacy',
      handler: (req) => ({ body: { success: true, data: company(req.query) } }),
    },
    {
      method: 'GET',
      path: '/api/company-info',
      family: 'legacy',
      handler: (req) => ({ body: { success: true, data: company(req.query) } }),
    },
    {
      method: 'GET',
      path: '/api/v1/company-info',
      family: 'v1',
      handler: (req) => ({ body: { success: true, data: { company: company(req.query) } } }),
    },
    {
      method: 'GET',
      path: '/api/clients',
      family: 'legacy',
      handler: () => ({ body: { success: true, data: live(state.clients).map((r) => underscored(r.doc)) } }),
    },
    {
      method: 'GET',
      path: '/api/jobs',
      family: 'legacy',
      handler: () => ({ body: { success: true, data: live(state.jobs).map((r) => underscored(r.doc)) } }),
    },
    {
      // Not a v1 write: no job.created webhook (spec: "When events fire", v1 routes only). Created
      // as the caller's user; the job shows in the v1 lists like any other.
      method: 'POST',
      path: '/api/jobs',
      family: 'legacy',
      form: JOB_FORM,
      handler: (req) => ({
        body: { success: true, data: underscored(createJob(ctx, legacyJobInput(req.body), 'legacy', req.userId ?? state.ownerUserId).doc) },
      }),
    },
  ]
}
