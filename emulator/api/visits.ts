// Visits (spec: Endpoints, Visits; Visit status). No create or delete; PATCH takes exactly eight
// keys; `visitStatus` is case-insensitive and stored canonically; `completed` stamps
// `actualEndTime`; `unscheduled` -> `scheduled` clears the job's `scheduleLater`; every status
// write re-derives the job's status.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import { bodyInstant, iso, queryInstant } from '../core/iso-time.js'
import { asObject, optBoolean, optIdArray, optNumber, optString, rejectUnknown, requireId } from '../core/validate.js'
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { VISIT_STATUSES } from '../data/account-config.js'
import { shape } from '../data/docs.js'
import { listResponse, parseListQuery } from '../http/list-query.js'
import type { RouteDef } from '../http/router.js'
import { rollUp } from './visit-rollup.js'

const SORTABLE = ['createdAt', 'updatedAt', 'visitStartDateTime', 'visitEndDateTime', 'visitStatus'] as const
const PATCH_KEYS = [
  'visitStartDateTime',
  'visitEndDateTime',
  'visitStatus',
  'teamId',
  'notes',
  'priority',
  'anyTime',
  'serviceDuration',
] as const

export function canonicalVisitStatus(v: unknown): string {
  const s = typeof v === 'string' ? v.trim().toLowerCase() : ''
  if (!(VISIT_STATUSES as readonly string[]).includes(s))
    throw badRequest(`Invalid visitStatus '${String(v)}'. Valid values: ${VISIT_STATUSES.join(', ')}`)
  return s
}

export function parseVisitPatch(body: unknown): Doc {
  const b = asObject(body)
  rejectUnknown(b, PATCH_KEYS, 'not updatable on a visit')
  const f: Doc = {}
  for (const k of ['visitStartDateTime', 'visitEndDateTime'] as const)
    if (b[k] !== undefined) f[k] = b[k] === null ? null : bodyInstant(k, b[k])
  if (b.visitStatus !== undefined) f.visitStatus = canonicalVisitStatus(b.visitStatus)
  const team = optIdArray(b, 'teamId')
  if (team !== undefined) f.teamId = team
  for (const k of ['notes', 'priority'] as const) {
    const v = optString(b, k)
    if (v !== undefined) f[k] = v
  }
  const anyTime = optBoolean(b, 'anyTime')
  if (anyTime !== undefined) f.anyTime = anyTime
  const duration = optNumber(b, 'serviceDuration')
  if (duration !== undefined) {
    if (!Number.isInteger(duration) || duration < 0) throw badRequest("'serviceDuration' must be a non-negative integer")
    f.serviceDuration = duration
  }
  return f
}

export function updateVisit(ctx: EmulatorContext, rec: StoredRecord<null>, fields: Doc, origin: Origin): void {
  const { state } = ctx
  const now = ctx.clock.now()
  const previous = rec.doc.visitStatus
  const next: Doc = { ...rec.doc, ...fields }
  if (fields.visitStatus === 'completed') next.actualEndTime = iso(now)
  state.visits.write(rec, shape('visit', next), now)
  ctx.counters.bump(`writes.visits.${origin}`)
  emit(ctx, origin, 'visit.updated', rec.doc)
  if (rec.doc.visitStatus !== previous) emit(ctx, origin, 'visit.status_changed', rec.doc)
  const job = state.jobs.get(String(rec.doc.jobId))
  if (job !== undefined && !job.deleted && fields.visitStatus !== undefined) {
    if (previous === 'unscheduled' && fields.visitStatus === 'scheduled' && job.doc.scheduleLater === true) {
      state.jobs.write(job, shape('job', { ...job.doc, scheduleLater: false }), now)
    }
    rollUp(ctx, job, origin, true)
  }
}

function liveVisit(ctx: EmulatorContext, id: string | undefined): StoredRecord<null> {
  const rec = ctx.state.visits.live(requireId(id))
  if (rec === undefined) throw notFound('Visit not found')
  return rec
}

export function visitRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  return [
    {
      method: 'GET',
      path: '/api/v1/visits',
      family: 'v1',
      scope: 'visits:read',
      handler: (req) => {
        const lq = { ...parseListQuery(req.query, SORTABLE), tieShuffle: req.tieShuffle ?? null }
        const jobId = req.query.get('jobId') ?? ''
        const rawStatus = req.query.get('visitStatus') ?? ''
        const status = rawStatus === '' ? '' : canonicalVisitStatus(rawStatus)
        const start = req.query.get('startDate') ?? ''
        const end = req.query.get('endDate') ?? ''
        const fromMs = start === '' ? null : queryInstant('startDate', start, lq.timezone)
        const toMs = end === '' ? null : queryInstant('endDate', end, lq.timezone)
        if (jobId === '' && status === '' && fromMs === null && toMs === null) return listResponse(state.visits, lq, null)
        return listResponse(state.visits, lq, (r) => {
          if (jobId !== '' && r.doc.jobId !== jobId) return false
          if (status !== '' && r.doc.visitStatus !== status) return false
          if (fromMs === null && toMs === null) return true
          const at = typeof r.doc.visitStartDateTime === 'string' ? Date.parse(r.doc.visitStartDateTime) : NaN
          if (Number.isNaN(at)) return false
          return (fromMs === null || at >= fromMs) && (toMs === null || at <= toMs)
        })
      },
    },
    {
      method: 'GET',
      path: '/api/v1/visits/:id',
      family: 'v1',
      scope: 'visits:read',
      handler: (req) => ({ body: `{"success":true,"data":${Collection.json(liveVisit(ctx, req.params.id))}}` }),
    },
    {
      method: 'PATCH',
      path: '/api/v1/visits/:id',
      family: 'v1',
      scope: 'visits:write',
      handler: (req) => {
        const rec = liveVisit(ctx, req.params.id)
        updateVisit(ctx, rec, parseVisitPatch(req.body), 'api')
        return { body: `{"success":true,"data":${Collection.json(rec)}}` }
      },
    },
  ]
}
