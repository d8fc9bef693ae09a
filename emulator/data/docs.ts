// Response shapes: the key order of each resource's document (spec: Resources and their fields).
// Documents are stored in this order so a list row, a single GET, a webhook snapshot and the
// control API's state are the same JSON text.
import type { Doc } from '../core/collection.js'

const CLIENT_KEYS = [
  'id',
  'recordId',
  'firstName',
  'lastName',
  'email',
  'phoneNumber',
  'companyName',
  'propertyAddress',
  'billingAddress',
  'companyAddress',
  'clientType',
  'stage',
  'status',
  'taxNumber',
  'website',
  'notes',
  'notificationPreferences',
  'preferredTechnicianIds',
  'jobFormIds',
  'properties',
  'createdBy',
  'createdAt',
  'updatedAt',
] as const

const JOB_KEYS = [
  'id',
  'recordId',
  'jobNumber',
  'clientId',
  'clientName',
  'jobPhone',
  'jobAddress',
  'assignedToTeams',
  'jobType',
  'jobStatus',
  'startDateTime',
  'endDateTime',
  'timezone',
  'scheduleLater',
  'anyTime',
  'priority',
  'subTotal',
  'discount',
  'tax',
  'total',
  'notes',
  'visits',
  'properties',
  'createdBy',
  'createdAt',
  'updatedAt',
] as const

const VISIT_KEYS = [
  'id',
  'jobId',
  'visitStartDateTime',
  'visitEndDateTime',
  'visitStatus',
  'teamId',
  'serviceDuration',
  'anyTime',
  'notes',
  'priority',
  'actualEndTime',
  'createdAt',
  'updatedAt',
] as const

const INVOICE_KEYS = [
  'id',
  'recordId',
  'documentNumber',
  'clientId',
  'title',
  'date',
  'dueDate',
  'status',
  'paymentStatus',
  'paidAmount',
  'actionStatus',
  'comments',
  'privateNotes',
  'discount',
  'discountType',
  'markup',
  'markupType',
  'items',
  'taxes',
  'subTotal',
  'total',
  'createdAt',
  'updatedAt',
] as const

const CUSTOM_RECORD_KEYS = ['id', 'object', 'stage', 'data', 'createdAt', 'updatedAt'] as const

export type ResourceKind = 'client' | 'job' | 'visit' | 'invoice' | 'record'

const KEYS: Record<ResourceKind, readonly string[]> = {
  client: CLIENT_KEYS,
  job: JOB_KEYS,
  visit: VISIT_KEYS,
  invoice: INVOICE_KEYS,
  record: CUSTOM_RECORD_KEYS,
}

/** The document in canonical key order; undefined values are left out (never sent, never stored). */
export function shape(kind: ResourceKind, src: Doc): Doc {
  const out: Doc = {}
  for (const key of KEYS[kind]) if (src[key] !== undefined) out[key] = src[key]
  return out
}

/** The field names a resource document may carry (for the control API's mutate). */
export const documentKeys = (kind: ResourceKind): readonly string[] => KEYS[kind]

/** Display name of a client, as jobs denormalise it into `clientName`. */
export function clientDisplayName(client: Doc): string {
  const name = [client.firstName, client.lastName].filter((v): v is string => typeof v === 'string' && v !== '').join(' ')
  if (name !== '') return name
  if (typeof client.companyName === 'string' && client.companyName !== '') return client.companyName
  return typeof client.email === 'string' ? client.email : ''
}

/** A business client has a company (the restriction of spec: Custom objects, relation validation). */
export const isBusinessClient = (client: Doc): boolean => client.clientType === 'Commercial'
