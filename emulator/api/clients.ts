// Clients (spec: Endpoints, Clients; Resources, Client). Deletion is soft: hidden from lists,
// 404 afterwards, jobs and invoices kept.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { notFound } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { requireId } from '../core/validate.js'
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { shape } from '../data/docs.js'
import { listResponse, parseListQuery } from '../http/list-query.js'
import type { RouteDef } from '../http/router.js'
import { mergeProperties, parseClientInput, type ClientInput } from './client-input.js'
import { aggregatedClientRow } from './job-aggregation.js'

const SORTABLE = ['createdAt', 'updatedAt', 'firstName', 'lastName', 'companyName', 'stage'] as const

export function createClient(ctx: EmulatorContext, input: ClientInput, origin: Origin): StoredRecord<null> {
  const { state } = ctx
  const now = ctx.clock.now()
  const id = state.ids.make(now)
  const properties = input.properties === undefined ? [] : mergeProperties([], input.properties)
  const doc = shape('client', {
    status: 'active',
    ...input.fields,
    id,
    recordId: state.prng.uuid(),
    properties,
    createdBy: state.ownerUserId,
    createdAt: iso(now),
    updatedAt: iso(now),
  })
  const rec = state.clients.insert(id, doc, now, now, null)
  ctx.counters.bump(`writes.clients.${origin}`)
  emit(ctx, origin, 'client.created', rec.doc)
  return rec
}

export function updateClient(ctx: EmulatorContext, rec: StoredRecord<null>, input: ClientInput, origin: Origin): void {
  const next: Doc = { ...rec.doc, ...input.fields }
  if (input.properties !== undefined) next.properties = mergeProperties(rec.doc.properties, input.properties)
  ctx.state.clients.write(rec, shape('client', next), ctx.clock.now())
  ctx.counters.bump(`writes.clients.${origin}`)
  emit(ctx, origin, 'client.updated', rec.doc)
}

export function deleteClient(ctx: EmulatorContext, rec: StoredRecord<null>, origin: Origin): void {
  ctx.state.clients.softDelete(rec, ctx.clock.now())
  ctx.counters.bump(`writes.clients.${origin}`)
  emit(ctx, origin, 'client.deleted', { id: rec.id })
}

function liveClient(ctx: EmulatorContext, id: string | undefined): StoredRecord<null> {
  const rec = ctx.state.clients.live(requireId(id))
  if (rec === undefined) throw notFound('Client not found')
  return rec
}

/** Search: free text over name, email, phone and company name; case-insensitive, partial. */
function matchesSearch(doc: Doc, needle: string): boolean {
  const phone = doc.phoneNumber as Doc | null | undefined
  const s = (v: unknown): string => (typeof v === 'string' ? v : '')
  const hay = [
    doc.firstName,
    doc.lastName,
    `${s(doc.firstName)} ${s(doc.lastName)}`,
    doc.email,
    doc.companyName,
    phone?.number,
    `${s(phone?.countryCode)}${s(phone?.number)}`,
  ]
  return hay.some((v) => typeof v === 'string' && v.toLowerCase().includes(needle))
}

export function clientRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  return [
    {
      method: 'GET',
      path: '/api/v1/clients',
      family: 'v1',
      scope: 'clients:read',
      handler: (req) => {
        const lq = { ...parseListQuery(req.query, SORTABLE), tieShuffle: req.tieShuffle ?? null }
        const search = (req.query.get('search') ?? '').trim().toLowerCase()
        const stage = req.query.get('stage') ?? ''
        const filter =
          search === '' && stage === ''
            ? null
            : (r: StoredRecord<null>) => (search === '' || matchesSearch(r.doc, search)) && (stage === '' || r.doc.stage === stage)
        return listResponse(state.clients, lq, filter, ctx.options.jobAggregation ? aggregatedClientRow(state) : undefined)
      },
    },
    {
      method: 'POST',
      path: '/api/v1/clients',
      family: 'v1',
      scope: 'clients:write',
      handler: (req) => ({
        body: `{"success":true,"data":${Collection.json(createClient(ctx, parseClientInput(req.body, 'create', state.clientSchema), 'api'))}}`,
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/clients/:id',
      family: 'v1',
      scope: 'clients:read',
      handler: (req) => ({ body: `{"success":true,"data":${Collection.json(liveClient(ctx, req.params.id))}}` }),
    },
    {
      method: 'PUT',
      path: '/api/v1/clients/:id',
      family: 'v1',
      scope: 'clients:write',
      handler: (req) => {
        const rec = liveClient(ctx, req.params.id)
        updateClient(ctx, rec, parseClientInput(req.body, 'update', state.clientSchema), 'api')
        return { body: `{"success":true,"data":${Collection.json(rec)}}` }
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/clients/:id',
      family: 'v1',
      scope: 'clients:write',
      handler: (req) => {
        const rec = liveClient(ctx, req.params.id)
        deleteClient(ctx, rec, 'api')
        // Spec: the DELETE body of clients is "not shown"; this one carries a message only.
        return { body: { success: true, message: 'Client deleted' } }
      },
    },
  ]
}
