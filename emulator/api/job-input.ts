// The job write contracts (spec: Job, create and update contracts): exactly the listed keys,
// `type`/`status` as create-only aliases, `notes` as an alias of `internalNotes`, money stored as
// sent (0 when omitted), statuses from the account's job pipeline.
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { bodyInstant } from '../core/iso-time.js'
import { asObject, optAddress, optBoolean, optIdArray, optNumber, optPhone, optString, rejectUnknown } from '../core/validate.js'
import { JOB_STATUSES } from '../data/account-config.js'

const CREATE_KEYS = [
  'clientId',
  'type',
  'jobType',
  'status',
  'jobStatus',
  'priority',
  'startDateTime',
  'endDateTime',
  'scheduleLater',
  'anyTime',
  'assignedToTeams',
  'jobNumber',
  'jobAddress',
  'jobPhone',
  'subTotal',
  'discount',
  'tax',
  'total',
  'internalNotes',
  'notes',
  'targetObjectSlug',
  'targetRecordId',
] as const

const UPDATE_KEYS = [
  'jobAddress',
  'jobPhone',
  'jobType',
  'startDateTime',
  'endDateTime',
  'assignedToTeams',
  'scheduleLater',
  'anyTime',
  'subTotal',
  'discount',
  'tax',
  'total',
  'priority',
  'internalNotes',
  'jobStatus',
  'notes',
] as const

const JOB_TYPES = ['one-off', 'recurring'] as const

export interface JobInput {
  fields: Doc
  clientId?: string
  jobNumber?: string
  target?: { slug: string; recordId: string }
}

function pickAlias(b: Doc, primary: string, alias: string): unknown {
  if (b[primary] !== undefined && b[alias] !== undefined && b[primary] !== b[alias])
    throw badRequest(`'${alias}' and '${primary}' disagree; send one of them`)
  return b[primary] ?? b[alias]
}

function jobStatus(v: unknown): string {
  if (typeof v !== 'string' || !(JOB_STATUSES as readonly string[]).includes(v)) {
    throw badRequest(`Invalid job status '${String(v)}': use a pipeline stage key (${JOB_STATUSES.join(', ')})`)
  }
  return v
}

export function parseJobInput(body: unknown, mode: 'create' | 'update'): JobInput {
  const b = asObject(body)
  rejectUnknown(
    b,
    mode === 'create' ? CREATE_KEYS : UPDATE_KEYS,
    mode === 'create' ? 'not part of the job create contract' : 'not updatable on a job',
  )
  const fields: Doc = {}
  const type = mode === 'create' ? pickAlias(b, 'jobType', 'type') : b.jobType
  if (type !== undefined) {
    if (typeof type !== 'string' || !(JOB_TYPES as readonly string[]).includes(type))
      throw badRequest(`Invalid job type ${JSON.stringify(type)}: use one-off or recurring`)
    fields.jobType = type
  }
  const status = mode === 'create' ? pickAlias(b, 'jobStatus', 'status') : b.jobStatus
  if (status !== undefined) fields.jobStatus = jobStatus(status)
  for (const k of ['startDateTime', 'endDateTime'] as const) if (b[k] !== undefined) fields[k] = b[k] === null ? null : bodyInstant(k, b[k])
  for (const k of ['scheduleLater', 'anyTime'] as const) {
    const v = optBoolean(b, k)
    if (v !== undefined) fields[k] = v
  }
  const teams = optIdArray(b, 'assignedToTeams')
  if (teams !== undefined) fields.assignedToTeams = teams
  const priority = optString(b, 'priority')
  if (priority !== undefined) fields.priority = priority
  const phone = optPhone(b, 'jobPhone')
  if (phone !== undefined) fields.jobPhone = phone
  const address = optAddress(b, 'jobAddress')
  if (address !== undefined) fields.jobAddress = address
  for (const k of ['subTotal', 'discount', 'tax', 'total'] as const) {
    const v = optNumber(b, k)
    if (v !== undefined) fields[k] = v
  }
  const notes = pickAlias(b, 'internalNotes', 'notes')
  if (notes !== undefined) {
    if (typeof notes !== 'string' && notes !== null) throw badRequest("'internalNotes' must be a string")
    fields.notes = notes
  }
  const input: JobInput = { fields }
  if (mode === 'create') {
    if (typeof b.clientId !== 'string' || !/^[a-fA-F0-9]{24}$/.test(b.clientId))
      throw badRequest("'clientId' is required: the 24-hex id of a client")
    input.clientId = b.clientId
    if (b.jobNumber !== undefined) {
      if (typeof b.jobNumber !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(b.jobNumber))
        throw badRequest("'jobNumber' must be an alphanumeric string")
      input.jobNumber = b.jobNumber
    }
    const slug = b.targetObjectSlug
    const recordId = b.targetRecordId
    if ((slug === undefined) !== (recordId === undefined)) throw badRequest('targetObjectSlug and targetRecordId are required together')
    if (slug !== undefined) {
      if (typeof slug !== 'string' || typeof recordId !== 'string') throw badRequest('targetObjectSlug and targetRecordId must be strings')
      input.target = { slug, recordId }
    }
  }
  return input
}
