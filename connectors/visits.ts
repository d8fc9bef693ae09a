// Visits (spec: Resources, Visit; Endpoints, Visits). Assignees (`teamId`) go to visit_assignees.
// Visits have no delete route and no delete event: cancellation is a status.
import { col } from './columns.js'
import { defineStream } from './define-stream.js'

export const visits = defineStream({
  name: 'visits',
  route: '/api/v1/visits',
  scope: 'visits:read',
  paging: 'updated-keyset',
  table: 'visits',
  description: 'A scheduled visit of a job.',
  snapshotEvents: ['visit.updated', 'visit.status_changed'],
  deletions: { events: [], reconcile: true },
  columns: [
    col('job_id', 'text', 'jobId', 'The parent job (jobs.id).'),
    col('visit_start_date_time', 'time', 'visitStartDateTime', 'Scheduled start.'),
    col('visit_end_date_time', 'time', 'visitEndDateTime', 'Scheduled end.'),
    col('visit_status', 'text', 'visitStatus', 'One of the eight visit statuses.'),
    col('service_duration', 'integer', 'serviceDuration', 'Planned on-site duration.'),
    col('any_time', 'flag', 'anyTime', 'Flexible within the day.'),
    col('notes', 'text', 'notes', 'Notes.'),
    col('priority', 'text', 'priority', 'Priority label.'),
    col('actual_end_time', 'time', 'actualEndTime', 'When the visit was completed (stamped upstream).'),
  ],
  children: [
    {
      table: 'visit_assignees',
      description: 'A user assigned to a visit, one row per visit and user.',
      parentColumn: 'visit_id',
      each: 'teamId',
      key: ['user_id'],
      columns: [col('user_id', 'text', 'teamId[]', 'The assigned user (team_members.id).', { nullable: false })],
    },
  ],
})
