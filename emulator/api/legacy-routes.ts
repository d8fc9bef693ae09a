// Legacy routes (spec: Legacy routes; Versioning 2-4): Bearer only, no scopes, and the body shapes
// differ on purpose: items carry `_id`, taxes and team members `id`, job forms `recordId`; the
// team list is `data.team`, taxes `data.taxes`, items and job forms a bare `data` array. The frozen
// `/api/clients` and `/api/jobs` lists ignore `since` and every filter.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { asObject } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import type { RouteDef } from '../http/router.js'

const CURRENCIES = [
  { code: 'USD', symbol: '$', name: 'US Dollar' }, { code: 'CAD', symbol: '$', name: 'Canadian Dollar' }, { code: 'EUR', symbol: '€', name: 'Euro' },
  { code: 'GBP', symbol: '£', name: 'Pound Sterling' }, { code: 'AUD', symbol: '$', name: 'Australian Dollar' },
]

const live = <I>(c: Collection<I>): StoredRecord<I>[] => c.all().filter((r) => !r.deleted)
const rows = <I>(c: Collection<I>): string => `[${live(c).map((r) => Collection.json(r)).join(',')}]`

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
  if (!Number.isInteger(limit) || (limit < 1 && limit !== -1)) throw badRequest("'limit' must be -1 (all) or a positive integer (at most 500)")
  if (limit === -1) return page === 1 ? members : []
  const size = Math.min(limit, 500)
  return members.slice((page - 1) * size, page * size)
}

export function legacyRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  const company = (q: URLSearchParams): Doc => ({ ...state.company, ...(q.get('withCurrencyData') === 'true' ? { currencies: CURRENCIES } : {}) })
  return [
    { method: 'GET', path: '/api/product-service', family: 'legacy', handler: () => ({ body: `{"success":true,"data":${rows(state.items)}}` }) },
    {
      method: 'POST', path: '/api/product-service', family: 'legacy',
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
        const doc = { _id: id, name: b.name, type: b.type, price: b.price, description: b.description ?? '', isActive: b.isActive ?? true, createdAt: iso(now), updatedAt: iso(now) }
        state.items.insert(id, doc, now, now, null)
        const { _id, ...rest } = doc
        return { body: { success: true, data: { id: _id, ...rest } } }
      },
    },
    {
      method: 'GET', path: '/api/teams', family: 'legacy',
      handler: (req) => {
        const members = live(state.team).map((r) => Collection.json(r))
        return { body: `{"success":true,"data":{"team":[${teamPage(req.query, members).join(',')}],"total":${members.length}}}` }
      },
    },
    { method: 'GET', path: '/api/team', family: 'legacy', handler: () => ({ body: `{"success":true,"data":${rows(state.team)}}` }) },
    { method: 'GET', path: '/api/taxes', family: 'legacy', handler: () => ({ body: `{"success":true,"data":{"taxes":${rows(state.taxes)}}}` }) },
    { method: 'GET', path: '/api/job-forms', family: 'legacy', handler: () => ({ body: `{"success":true,"data":${rows(state.jobForms)}}` }) },
    { method: 'GET', path: '/api/companyInfo', family: 'legacy', handler: (req) => ({ body: { success: true, data: company(req.query) } }) },
    { method: 'GET', path: '/api/company-info', family: 'legacy', handler: (req) => ({ body: { success: true, data: company(req.query) } }) },
    { method: 'GET', path: '/api/v1/company-info', family: 'v1', handler: (req) => ({ body: { success: true, data: { company: company(req.query) } } }) },
    { method: 'GET', path: '/api/clients', family: 'legacy', handler: () => ({ body: { success: true, data: live(state.clients).map((r) => underscored(r.doc)) } }) },
    { method: 'GET', path: '/api/jobs', family: 'legacy', handler: () => ({ body: { success: true, data: live(state.jobs).map((r) => underscored(r.doc)) } }) },
  ]
}
