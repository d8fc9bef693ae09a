// Jobs (spec: Resources, Job; Endpoints, Jobs). Assignees (`assignedToTeams`, user ids despite the
// name) go to job_assignees.
import { defineStream } from './define-stream.js'
import { flag, ids, json, phone, real, text, time } from './mapping.js'

export const jobs = defineStream({
  name: 'jobs',
  route: '/api/v1/jobs',
  scope: 'jobs:read',
  paging: 'updated-keyset',
  table: 'jobs',
  childTables: [{ table: 'job_assignees', parentColumn: 'job_id' }],
  snapshotEvents: ['job.created', 'job.updated'],
  deletions: { events: ['job.deleted'], reconcile: true },
  columns: (p) => ({
    record_id: text(p.recordId),
    job_number: text(p.jobNumber),
    client_id: text(p.clientId),
    client_name: text(p.clientName),
    ...phone('job_phone_', p.jobPhone),
    job_address: json(p.jobAddress),
    job_type: text(p.jobType ?? p.type),
    job_status: text(p.jobStatus ?? p.status),
    start_date_time: time(p.startDateTime),
    end_date_time: time(p.endDateTime),
    timezone: text(p.timezone),
    schedule_later: flag(p.scheduleLater),
    any_time: flag(p.anyTime),
    priority: text(p.priority),
    sub_total: real(p.subTotal),
    discount: real(p.discount),
    tax: real(p.tax),
    total: real(p.total),
    notes: text(p.notes ?? p.internalNotes),
    visits: json(p.visits),
    properties: json(p.properties),
    created_by: text(p.createdBy),
  }),
  children: (p, id) => [
    {
      table: 'job_assignees',
      parentColumn: 'job_id',
      rows: [...new Set(ids(p.assignedToTeams))].map((user_id) => ({ job_id: id, user_id })),
    },
  ],
})
