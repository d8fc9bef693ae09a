// Visits (spec: Resources, Visit; Endpoints, Visits). Assignees (`teamId`) go to visit_assignees.
// Visits have no delete route and no delete event: cancellation is a status.
import { defineStream } from './define-stream.js'
import { flag, ids, integer, text, time } from './mapping.js'

export const visits = defineStream({
  name: 'visits',
  route: '/api/v1/visits',
  scope: 'visits:read',
  paging: 'updated-keyset',
  table: 'visits',
  childTables: [{ table: 'visit_assignees', parentColumn: 'visit_id' }],
  snapshotEvents: ['visit.updated', 'visit.status_changed'],
  deletions: { events: [], reconcile: true },
  columns: (p) => ({
    job_id: text(p.jobId),
    visit_start_date_time: time(p.visitStartDateTime),
    visit_end_date_time: time(p.visitEndDateTime),
    visit_status: text(p.visitStatus),
    service_duration: integer(p.serviceDuration),
    any_time: flag(p.anyTime),
    notes: text(p.notes),
    priority: text(p.priority),
    actual_end_time: time(p.actualEndTime),
  }),
  children: (p, id) => [
    { table: 'visit_assignees', parentColumn: 'visit_id', rows: [...new Set(ids(p.teamId))].map((user_id) => ({ visit_id: id, user_id })) },
  ],
})
