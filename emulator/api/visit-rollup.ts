// The job-status rollup from visit status writes (spec: Visit status, last row): the parent job's
// status is re-derived from its active visits through the job pipeline; when a sensible status
// resolves and differs, the job moves and `job.status_changed` fires; otherwise it is untouched.
//
// Resolved here: "active" visits are the ones not cancelled; a job in a status past the work
// (on-hold, invoiced, paid, cancelled, closed) is never moved back by a visit.
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { JOB_STATUSES, ROLLUP_FROZEN_STATUSES } from '../data/account-config.js'
import { shape } from '../data/docs.js'
import { statusChangedPayload, type JobRecord } from './jobs.js'

const WORKING = ['in_transit', 'arrived', 'in_progress', 'paused']

/** The job status implied by its visits' statuses, or null when none resolves. */
export function deriveJobStatus(visitStatuses: readonly string[]): string | null {
  const active = visitStatuses.filter((s) => s !== 'cancelled')
  if (active.length === 0) return null
  if (active.every((s) => s === 'completed')) return 'completed'
  if (active.some((s) => WORKING.includes(s) || s === 'completed')) return 'in-progress'
  if (active.some((s) => s === 'scheduled')) return 'scheduled'
  return null
}

/**
 * Refreshes the job's embedded `visits` summary and applies the rollup. The job's updatedAt moves
 * with its summary, since the summary is part of the job document a mirror stores.
 */
export function rollUp(ctx: EmulatorContext, job: JobRecord, origin: Origin, applyStatus: boolean): void {
  const ids = ctx.state.visitsByJob.get(job.id) ?? []
  const visits = ids.map((id) => ctx.state.visits.get(id)).filter((v): v is NonNullable<typeof v> => v !== undefined && !v.deleted)
  const summary = visits.map((v) => ({ id: v.id, visitStatus: v.doc.visitStatus }))
  const previous = job.doc.jobStatus
  let status = previous
  if (applyStatus && typeof previous === 'string' && !ROLLUP_FROZEN_STATUSES.includes(previous)) {
    const derived = deriveJobStatus(visits.map((v) => String(v.doc.visitStatus)))
    if (derived !== null && (JOB_STATUSES as readonly string[]).includes(derived)) status = derived
  }
  if (status === previous && JSON.stringify(summary) === JSON.stringify(job.doc.visits)) return
  ctx.state.jobs.write(job, shape('job', { ...job.doc, visits: summary, jobStatus: status }), ctx.clock.now())
  if (status !== previous) emit(ctx, origin, 'job.status_changed', statusChangedPayload(job.doc, previous))
}
