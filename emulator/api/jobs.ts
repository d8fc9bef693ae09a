// Jobs (spec: Endpoints, Jobs; Job status). Creating a job creates no visit; `clientName` is
// denormalised at creation; a status change fires `job.status_changed`.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest, conflict, notFound } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { requireId } from '../core/validate.js'
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { ACCOUNT_TIMEZONE } from '../data/account-config.js'
import { clientDisplayName, shape } from '../data/docs.js'
import type { JobInternal } from '../data/state.js'
import { listResponse, parseListQuery, sameIgnoringCase } from '../http/list-query.js'
import type { RouteDef } from '../http/router.js'
import { parseJobInput, type JobInput } from './job-input.js'

const SORTABLE = ['createdAt', 'updatedAt', 'startDateTime', 'endDateTime', 'jobNumber', 'total', 'jobStatus', 'priority'] as const

export type JobRecord = StoredRecord<JobInternal>

export function statusChangedPayload(doc: Doc, previousStatus: unknown): Doc {
  return { job: { id: doc.id, jobNumber: doc.jobNumber, jobStatus: doc.jobStatus }, previousStatus, newStatus: doc.jobStatus }
}

function uniqueJobNumber(ctx: EmulatorContext, wanted: string | undefined): string {
  const taken = new Set(
    ctx.state.jobs
      .all()
      .filter((j) => !j.deleted)
      .map((j) => j.doc.jobNumber),
  )
  if (wanted !== undefined) {
    if (taken.has(wanted)) throw conflict(`A job with jobNumber '${wanted}' already exists`)
    return wanted
  }
  let n = ctx.state.next.jobNumber
  while (taken.has(`J${n}`)) n++
  ctx.state.next.jobNumber = n + 1
  return `J${n}`
}

/** `createdBy`: the user the caller authenticates as (default the account owner, as API keys are). */
export function createJob(ctx: EmulatorContext, input: JobInput, origin: Origin, createdBy: string = ctx.state.ownerUserId): JobRecord {
  const { state } = ctx
  const client = state.clients.live(input.clientId ?? '')
  if (client === undefined) throw badRequest(`clientId ${String(input.clientId)} does not match a client of this account`)
  const internal: JobInternal = {}
  if (input.target !== undefined) {
    const def = state.objectDefs.find((d) => d.slug === input.target?.slug)
    if (def === undefined) throw badRequest(`targetObjectSlug '${input.target.slug}' is not a custom object of this account`)
    if (state.objects.get(def.slug)?.live(input.target.recordId) === undefined)
      throw badRequest(`targetRecordId ${input.target.recordId} does not match a ${def.slug} record`)
    internal.targetObjectSlug = def.slug
    internal.targetRecordId = input.target.recordId
  }
  const now = ctx.clock.now()
  const id = state.ids.make(now)
  const f = input.fields
  const doc = shape('job', {
    jobPhone: null,
    jobAddress: null,
    assignedToTeams: [],
    jobType: 'one-off',
    startDateTime: null,
    endDateTime: null,
    scheduleLater: false,
    anyTime: false,
    priority: 'medium',
    subTotal: 0,
    discount: 0,
    tax: 0,
    total: 0,
    notes: '',
    ...f,
    jobStatus: f.jobStatus ?? (f.scheduleLater === true ? 'draft' : 'scheduled'),
    id,
    recordId: state.prng.uuid(),
    jobNumber: uniqueJobNumber(ctx, input.jobNumber),
    clientId: client.id,
    clientName: clientDisplayName(client.doc),
    timezone: ACCOUNT_TIMEZONE,
    visits: [],
    properties: [],
    createdBy,
    createdAt: iso(now),
    updatedAt: iso(now),
  })
  const rec = state.jobs.insert(id, doc, now, now, internal)
  state.visitsByJob.set(id, [])
  ctx.counters.bump(`writes.jobs.${origin}`)
  emit(ctx, origin, 'job.created', rec.doc)
  return rec
}

export function updateJob(ctx: EmulatorContext, rec: JobRecord, fields: Doc, origin: Origin): void {
  const previous = rec.doc.jobStatus
  ctx.state.jobs.write(rec, shape('job', { ...rec.doc, ...fields }), ctx.clock.now())
  ctx.counters.bump(`writes.jobs.${origin}`)
  emit(ctx, origin, 'job.updated', rec.doc)
  if (rec.doc.jobStatus !== previous) emit(ctx, origin, 'job.status_changed', statusChangedPayload(rec.doc, previous))
}

export function deleteJob(ctx: EmulatorContext, rec: JobRecord, origin: Origin): void {
  ctx.state.jobs.softDelete(rec, ctx.clock.now())
  ctx.counters.bump(`writes.jobs.${origin}`)
  emit(ctx, origin, 'job.deleted', { id: rec.id })
}

function liveJob(ctx: EmulatorContext, id: string | undefined): JobRecord {
  const rec = ctx.state.jobs.live(requireId(id))
  if (rec === undefined) throw notFound('Job not found')
  return rec
}

export function jobRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  const one = (rec: JobRecord) => ({ body: `{"success":true,"data":${Collection.json(rec)}}` })
  return [
    {
      method: 'GET',
      path: '/api/v1/jobs',
      family: 'v1',
      scope: 'jobs:read',
      handler: (req) => {
        const lq = { ...parseListQuery(req.query, SORTABLE), tieShuffle: req.tieShuffle ?? null }
        const search = (req.query.get('search') ?? '').trim().toLowerCase()
        const clientId = req.query.get('clientId') ?? ''
        const status = req.query.get('status') ?? req.query.get('jobStatus') ?? ''
        if (search === '' && clientId === '' && status === '') return listResponse(state.jobs, lq, null)
        return listResponse(state.jobs, lq, (r) => {
          if (clientId !== '' && r.doc.clientId !== clientId) return false
          if (status !== '' && !sameIgnoringCase(r.doc.jobStatus, status)) return false
          if (search === '') return true
          // Search covers the job number and the client's first, last and company names only.
          const c = state.clients.get(String(r.doc.clientId))?.doc ?? {}
          return [r.doc.jobNumber, c.firstName, c.lastName, c.companyName].some(
            (v) => typeof v === 'string' && v.toLowerCase().includes(search),
          )
        })
      },
    },
    {
      method: 'POST',
      path: '/api/v1/jobs',
      family: 'v1',
      scope: 'jobs:write',
      handler: (req) => one(createJob(ctx, parseJobInput(req.body, 'create'), 'api')),
    },
    { method: 'GET', path: '/api/v1/jobs/:id', family: 'v1', scope: 'jobs:read', handler: (req) => one(liveJob(ctx, req.params.id)) },
    {
      method: 'PUT',
      path: '/api/v1/jobs/:id',
      family: 'v1',
      scope: 'jobs:write',
      handler: (req) => {
        const rec = liveJob(ctx, req.params.id)
        updateJob(ctx, rec, parseJobInput(req.body, 'update').fields, 'api')
        return one(rec)
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/jobs/:id',
      family: 'v1',
      scope: 'jobs:write',
      handler: (req) => {
        const rec = liveJob(ctx, req.params.id)
        deleteJob(ctx, rec, 'api')
        // Spec: the DELETE body of jobs is "not shown"; this one echoes the id.
        return { body: { success: true, data: { id: rec.id } } }
      },
    },
  ]
}
