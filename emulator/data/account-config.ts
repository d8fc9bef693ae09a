// The emulated account's own settings: pipelines, scopes, event names (spec: States and
// transitions; Authentication 5; Events). Fixed across seeds so tests can name them.

/** Job pipeline: a new account's four stages plus the ones accounts often add (spec: Job status). */
export const JOB_STATUSES = [
  'draft',
  'scheduled',
  'in-progress',
  'completed',
  'on-hold',
  'invoiced',
  'paid',
  'cancelled',
  'closed',
] as const

/** Statuses the visit rollup never moves a job out of: it only resolves work-in-progress states. */
export const ROLLUP_FROZEN_STATUSES: readonly string[] = ['on-hold', 'invoiced', 'paid', 'cancelled', 'closed']

export const VISIT_STATUSES = [
  'scheduled',
  'unscheduled',
  'in_transit',
  'arrived',
  'in_progress',
  'paused',
  'completed',
  'cancelled',
] as const

/** The account's client pipeline (spec: Client `stage`, the create schema's list). */
export const CLIENT_STAGES = [
  'New Lead',
  'Contacted',
  'Qualified',
  'Proposal',
  'Inspection',
  'Negotiation',
  'Won',
  'Lost',
  'Active Client',
  'Inactive Client',
] as const

export const CLIENT_TYPES = ['Residential', 'Commercial'] as const

export const INVOICE_STATUSES = ['unpaid', 'paid', 'partial', 'overdue'] as const

export const SCOPES = [
  'clients:read',
  'clients:write',
  'jobs:read',
  'jobs:write',
  'visits:read',
  'visits:write',
  'invoices:read',
  'invoices:write',
  'integrations:write',
  'webhooks:manage',
  'objects:read',
  'objects:write',
  'items:write',
  '*',
] as const

/** Exactly seventeen subscribable events (spec: Events). */
export const EVENTS = [
  'client.created',
  'client.updated',
  'client.deleted',
  'job.created',
  'job.updated',
  'job.status_changed',
  'job.deleted',
  'visit.status_changed',
  'visit.updated',
  'invoice.created',
  'invoice.updated',
  'invoice.paid',
  'invoice.deleted',
  'object.created',
  'object.updated',
  'object.stage_changed',
  'object.deleted',
] as const

export type EventName = (typeof EVENTS)[number]

/** The seven built-in modules, which are not custom objects (spec: Custom object definition). */
export const BUILT_IN_MODULES = ['client', 'job', 'visit', 'invoice', 'estimate', 'request', 'task'] as const

export const INTEGRATIONS = ['calendar-a', 'calendar-b', 'accounting', 'payments'] as const
export type IntegrationName = (typeof INTEGRATIONS)[number]

export const CURRENCY = 'USD'
export const ACCOUNT_TIMEZONE = 'America/Chicago'
