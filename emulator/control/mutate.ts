// POST /__emulator/mutate: writes as the web application makes them (spec: "When events fire":
// client, job, visit and invoice changes made in the app emit no webhook; custom-object writes in
// the app do emit `object.*`, unless `emit: false`). The caller may set any document field,
// `updatedAt` and `createdAt` included, and may act on `count` random live records.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import { iso, parseInstant } from '../core/iso-time.js'
import type { EmulatorContext, Origin } from '../context.js'
import { createClient, deleteClient } from '../api/clients.js'
import { createInvoice, deleteInvoice } from '../api/invoices.js'
import { createJob, deleteJob } from '../api/jobs.js'
import { rollUp } from '../api/visit-rollup.js'
import { updateVisit } from '../api/visits.js'
import { shape, type ResourceKind } from '../data/docs.js'
import { createRecord, deleteRecord, updateRecord } from '../objects/object-writes.js'
import { fakeClient, fakeInvoice, fakeJob, fakeRecordData, liveIds } from './fake-input.js'

export interface MutateBody {
  resource: string
  op: 'create' | 'update' | 'delete'
  id?: string
  count?: number
  fields?: Doc
  emit?: boolean
}

const KIND: Record<string, ResourceKind | null> = {
  clients: 'client',
  jobs: 'job',
  visits: 'visit',
  invoices: 'invoice',
  items: null,
  taxes: null,
  team: null,
  job_forms: null,
}

function collectionOf(ctx: EmulatorContext, resource: string): Collection {
  const s = ctx.state
  const map: Record<string, Collection | undefined> = {
    clients: s.clients,
    jobs: s.jobs,
    visits: s.visits,
    invoices: s.invoices,
    items: s.items,
    taxes: s.taxes,
    team: s.team,
    job_forms: s.jobForms,
  }
  const coll = resource.startsWith('objects/') ? s.objects.get(resource.slice(8)) : map[resource]
  if (coll === undefined)
    throw badRequest(`Unknown resource '${resource}': use clients, jobs, visits, invoices, items, taxes, team, job_forms or objects/<slug>`)
  return coll
}

/** Sets caller fields on a record as a direct write; `updatedAt`/`createdAt` in the fields are honoured. */
function overlay(ctx: EmulatorContext, coll: Collection, rec: StoredRecord, kind: ResourceKind | null, fields: Doc): void {
  const at = (v: unknown): number | null => (typeof v === 'string' ? parseInstant(v) : null)
  const updatedMs = at(fields.updatedAt) ?? ctx.clock.now()
  const createdMs = at(fields.createdAt)
  const merged = { ...rec.doc, ...fields, ...(createdMs === null ? {} : { createdAt: iso(createdMs) }) }
  coll.write(rec, kind === null ? merged : shape(kind, merged), updatedMs)
  if (createdMs !== null) rec.createdMs = createdMs
}

function create(ctx: EmulatorContext, resource: string, fields: Doc, origin: Origin): StoredRecord {
  const s = ctx.state
  const now = ctx.clock.now()
  if (resource === 'clients') return createClient(ctx, fakeClient(s.prng), origin)
  if (resource === 'jobs')
    return createJob(ctx, { ...fakeJob(s), ...(typeof fields.clientId === 'string' ? { clientId: fields.clientId } : {}) }, origin)
  if (resource === 'invoices')
    return createInvoice(ctx, { ...fakeInvoice(s), ...(typeof fields.clientId === 'string' ? { clientId: fields.clientId } : {}) }, origin)
  if (resource === 'visits') {
    const jobId = typeof fields.jobId === 'string' ? fields.jobId : s.prng.pick(liveIds(s.jobs))
    const job = s.jobs.live(jobId)
    if (job === undefined) throw notFound(`Job ${jobId} not found`)
    const id = s.ids.make(now)
    const rec = s.visits.insert(
      id,
      shape('visit', {
        id,
        jobId,
        visitStartDateTime: null,
        visitEndDateTime: null,
        visitStatus: 'unscheduled',
        teamId: [],
        serviceDuration: 60,
        anyTime: false,
        notes: '',
        priority: 'medium',
        actualEndTime: null,
        createdAt: iso(now),
        updatedAt: iso(now),
      }),
      now,
      now,
      null,
    )
    s.visitsByJob.set(jobId, [...(s.visitsByJob.get(jobId) ?? []), id])
    rollUp(ctx, job, origin, false)
    return rec
  }
  if (resource.startsWith('objects/')) {
    const def = s.objectDefs.find((d) => d.slug === resource.slice(8))
    if (def === undefined) throw badRequest(`Unknown custom object '${resource.slice(8)}'`)
    const data = { ...fakeRecordData(s, def), ...(fields.data as Doc | undefined) }
    return createRecord(
      ctx,
      def,
      {
        data,
        stage: typeof fields.stage === 'string' ? fields.stage : undefined,
        linkedRecords: undefined,
        suppress: false,
        statusInBody: false,
      },
      origin,
      'en',
    )
  }
  const coll = collectionOf(ctx, resource)
  const id = s.ids.make(now)
  const idKey = resource === 'items' ? '_id' : resource === 'job_forms' ? 'recordId' : 'id'
  return coll.insert(
    id,
    { [idKey]: id, name: `New ${resource} ${s.prng.hex(4)}`, isActive: true, createdAt: iso(now), updatedAt: iso(now) },
    now,
    now,
    null,
  )
}

function update(ctx: EmulatorContext, resource: string, rec: StoredRecord, fields: Doc, origin: Origin): void {
  const coll = collectionOf(ctx, resource)
  if (resource === 'visits') {
    const { updatedAt: _u, createdAt: _c, ...rest } = fields
    updateVisit(ctx, rec as StoredRecord<null>, rest, origin)
    if (fields.updatedAt !== undefined || fields.createdAt !== undefined) overlay(ctx, coll, rec, 'visit', fields)
    return
  }
  if (resource.startsWith('objects/')) {
    const def = ctx.state.objectDefs.find((d) => d.slug === resource.slice(8))
    if (def === undefined) throw badRequest(`Unknown custom object '${resource.slice(8)}'`)
    const stage = typeof fields.stage === 'string' ? fields.stage : undefined
    const data = (fields.data as Doc | undefined) ?? {}
    updateRecord(
      ctx,
      def,
      rec as StoredRecord<{ linkedRecords: unknown[] | null }>,
      { data, stage, linkedRecords: undefined, suppress: false, statusInBody: stage !== undefined },
      origin,
      'en',
    )
    if (fields.updatedAt !== undefined) overlay(ctx, coll, rec, 'record', { updatedAt: fields.updatedAt })
    return
  }
  overlay(ctx, coll, rec, KIND[resource] ?? null, fields)
  ctx.counters.bump(`writes.${resource}.${origin}`)
}

function remove(ctx: EmulatorContext, resource: string, rec: StoredRecord, origin: Origin): void {
  const s = ctx.state
  if (resource === 'clients') return deleteClient(ctx, rec as StoredRecord<null>, origin)
  if (resource === 'jobs') return deleteJob(ctx, rec as StoredRecord<object>, origin)
  if (resource === 'invoices') return deleteInvoice(ctx, rec as StoredRecord<object>, origin)
  if (resource.startsWith('objects/')) {
    const def = s.objectDefs.find((d) => d.slug === resource.slice(8))
    if (def !== undefined) deleteRecord(ctx, def, rec as StoredRecord<{ linkedRecords: unknown[] | null }>, origin)
    return
  }
  collectionOf(ctx, resource).softDelete(rec, ctx.clock.now())
  if (resource === 'visits') {
    const job = s.jobs.get(String(rec.doc.jobId))
    if (job !== undefined && !job.deleted) rollUp(ctx, job, origin, false)
  }
}

export function mutate(ctx: EmulatorContext, body: MutateBody): Doc[] {
  const { resource, op } = body
  // The body is JSON from the caller: a missing or non-text resource is a 400 naming it, not a crash.
  if (typeof resource !== 'string')
    throw badRequest("'resource' is required: clients, jobs, visits, invoices, items, taxes, team, job_forms or objects/<slug>")
  const coll = collectionOf(ctx, resource)
  const origin: Origin = body.emit === false ? 'silent' : 'app'
  const fields = body.fields ?? {}
  const count = body.count ?? 1
  if (!Number.isInteger(count) || count < 1) throw badRequest("'count' must be a positive integer")
  if (op === 'create') {
    const out: Doc[] = []
    for (let i = 0; i < count; i++) {
      const rec = create(ctx, resource, fields, origin)
      const rest = Object.fromEntries(Object.entries(fields).filter(([k]) => !['clientId', 'jobId', 'data', 'stage'].includes(k)))
      if (Object.keys(rest).length > 0) overlay(ctx, coll, rec, KIND[resource] ?? (resource.startsWith('objects/') ? 'record' : null), rest)
      out.push(rec.doc)
    }
    return out
  }
  if (op !== 'update' && op !== 'delete') throw badRequest("'op' must be create, update or delete")
  let targets: StoredRecord[]
  if (body.id !== undefined) {
    const rec = coll.live(body.id)
    if (rec === undefined) throw notFound(`No live ${resource} record ${body.id}`)
    targets = [rec]
  } else {
    targets = ctx.state.prng.sample(
      coll.all().filter((r) => !r.deleted),
      count,
    )
  }
  for (const rec of targets) {
    if (op === 'update') update(ctx, resource, rec, fields, origin)
    else remove(ctx, resource, rec, origin)
  }
  return targets.map((r) => r.doc)
}

/** Every record of a resource in the API's shape, soft-deleted ones included with `deleted: true`. */
export function stateOf(ctx: EmulatorContext, resource: string): string {
  const coll = collectionOf(ctx, resource)
  return `[${coll
    .all()
    .map((r) => `${Collection.json(r).slice(0, -1)}${Object.keys(r.doc).length > 0 ? ',' : ''}"deleted":${String(r.deleted)}}`)
    .join(',')}]`
}
