// Jobs (spec: Resources, Job; Endpoints, Jobs). Assignees (`assignedToTeams`, user ids despite the
// name) go to job_assignees.
import { col } from './columns.js'
import { defineStream } from './define-stream.js'

export const jobs = defineStream({
  name: 'jobs',
  route: '/api/v1/jobs',
  scope: 'jobs:read',
  paging: 'updated-keyset',
  table: 'jobs',
  description: 'A job for a client, identified by its job number; its visits are in visits.',
  snapshotEvents: ['job.created', 'job.updated'],
  deletions: { events: ['job.deleted'], reconcile: true },
  // Carries the job's id and its previous and new status, but no updatedAt (spec, Events).
  statusEvent: { event: 'job.status_changed', column: 'job_status', record: 'job' },
  columns: [
    col('record_id', 'text', 'recordId', "The job's UUID."),
    col('job_number', 'text', 'jobNumber', "The account's own reference for the job."),
    col('client_id', 'text', 'clientId', 'The client the job is for (clients.id).'),
    col('client_name', 'text', 'clientName', "The client's name as the job shows it."),
    col('job_phone_country_code', 'text', 'jobPhone.countryCode', 'Job phone: dial prefix with its plus sign.'),
    col('job_phone_number', 'text', 'jobPhone.number', 'Job phone: the number.'),
    col('job_phone_country_identifier', 'text', 'jobPhone.countryIdentifier', 'Job phone: ISO country identifier.'),
    col('job_address', 'json', 'jobAddress', 'Job address (DetailedAddress) as JSON.'),
    col('job_type', 'text', 'jobType|type', 'one-off or recurring.'),
    col('job_status', 'text', 'jobStatus|status', "The job's pipeline stage key (such as in-progress)."),
    col('start_date_time', 'time', 'startDateTime', 'Scheduled start.'),
    col('end_date_time', 'time', 'endDateTime', 'Scheduled end.'),
    col('timezone', 'text', 'timezone', "The job's time zone."),
    col('schedule_later', 'flag', 'scheduleLater', 'Created without a time window.'),
    col('any_time', 'flag', 'anyTime', 'Not time-boxed.'),
    col('priority', 'text', 'priority', 'Priority label.'),
    col('sub_total', 'real', 'subTotal', 'Subtotal, as sent (no arithmetic upstream).'),
    col('discount', 'real', 'discount', 'Discount, as sent.'),
    col('tax', 'real', 'tax', 'Tax, as sent.'),
    col('total', 'real', 'total', 'Total, as sent.'),
    col('notes', 'text', 'notes|internalNotes', 'Internal notes.'),
    col('visits', 'json', 'visits', "The job's visits (id and status) as a JSON array."),
    col('properties', 'json', 'properties', 'Custom job fields as JSON.'),
    col('created_by', 'text', 'createdBy', 'The user who created the job.'),
  ],
  children: [
    {
      table: 'job_assignees',
      description: 'A user assigned to a job, one row per job and user.',
      parentColumn: 'job_id',
      each: 'assignedToTeams',
      key: ['user_id'],
      columns: [col('user_id', 'text', 'assignedToTeams[]', 'The assigned user (team_members.id).', { nullable: false })],
    },
  ],
})
