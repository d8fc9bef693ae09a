// The client write contract (spec: Client; Conventions 7): the writable keys, `firstName` or
// `email` on create, stages from the account's client pipeline, and `properties` merged by field id.
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { asObject, optAddress, optEnum, optIdArray, optPhone, optString, rejectUnknown } from '../core/validate.js'
import { CLIENT_STAGES, CLIENT_TYPES } from '../data/account-config.js'
import type { ObjectDef } from '../objects/object-definitions.js'

const WRITABLE = [
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
  'taxNumber',
  'website',
  'notes',
  'notificationPreferences',
  'preferredTechnicianIds',
  'jobFormIds',
  'properties',
] as const

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** Property updates by field id; null clears one (spec: Client `properties`). */
export type PropertyPatch = Map<string, string | null>

function parseProperties(v: unknown, schema: ObjectDef): PropertyPatch {
  const known = new Set(schema.fields.map((f) => f.id))
  const out: PropertyPatch = new Map()
  const put = (id: unknown, value: unknown): void => {
    if (typeof id !== 'string' || !known.has(id))
      throw badRequest(`Unknown client property field id: ${String(id)} (read GET /api/v1/objects/client/schema)`)
    if (value !== null && typeof value !== 'string')
      throw badRequest(`Client property ${id}: value must be a string (a JSON-encoded array for multi-select) or null`)
    out.set(id, value)
  }
  if (Array.isArray(v)) {
    for (const entry of v) {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
        throw badRequest("Each entry of 'properties' must be {id, value}")
      // `name` and `type` inside entries are tolerated and ignored.
      const e = entry as Doc
      const extra = Object.keys(e).filter((k) => !['id', 'value', 'name', 'type'].includes(k))
      if (extra.length > 0) throw badRequest(`Unknown field in properties entry: ${extra.join(', ')}`)
      put(e.id, e.value === undefined ? null : e.value)
    }
  } else if (typeof v === 'object' && v !== null) {
    for (const [id, value] of Object.entries(v as Doc)) put(id, value)
  } else throw badRequest("'properties' must be an array of {id, value} or an object keyed by field id")
  return out
}

export function mergeProperties(current: unknown, patch: PropertyPatch): Doc[] {
  const list = Array.isArray(current) ? (current as Doc[]).map((p) => ({ ...p })) : []
  for (const [id, value] of patch) {
    const at = list.findIndex((p) => p.id === id)
    if (value === null) {
      if (at >= 0) list.splice(at, 1)
    } else if (at >= 0) list[at] = { id, value }
    else list.push({ id, value })
  }
  return list
}

export interface ClientInput {
  fields: Doc
  properties: PropertyPatch | undefined
}

export function parseClientInput(body: unknown, mode: 'create' | 'update', schema: ObjectDef): ClientInput {
  const b = asObject(body)
  // `status`, `isDeleted` and `deletedAt` are response fields: sending them is a 400 (spec: Client).
  rejectUnknown(b, WRITABLE, mode === 'create' ? 'not part of the client create contract' : 'not part of the client update contract')
  const fields: Doc = {}
  for (const k of ['firstName', 'lastName', 'companyName', 'taxNumber', 'website', 'notes'] as const) {
    const v = optString(b, k)
    if (v !== undefined) fields[k] = v
  }
  const email = optString(b, 'email')
  if (email !== undefined) {
    if (email !== null && !EMAIL.test(email)) throw badRequest(`'email' is not a valid email address: ${email}`)
    fields.email = email
  }
  const phone = optPhone(b, 'phoneNumber')
  if (phone !== undefined) fields.phoneNumber = phone
  for (const k of ['propertyAddress', 'billingAddress', 'companyAddress'] as const) {
    const a = optAddress(b, k)
    if (a !== undefined) fields[k] = a
  }
  const type = optEnum(b, 'clientType', CLIENT_TYPES)
  if (type !== undefined) fields.clientType = type
  if (b.stage !== undefined) {
    if (typeof b.stage !== 'string' || !(CLIENT_STAGES as readonly string[]).includes(b.stage)) {
      throw badRequest(`'stage' must be one of the account's client stages: ${CLIENT_STAGES.join(', ')}`)
    }
    fields.stage = b.stage
  }
  if (b.notificationPreferences !== undefined) {
    const p = b.notificationPreferences
    if (typeof p !== 'object' || p === null || Array.isArray(p)) throw badRequest("'notificationPreferences' must be an object")
    fields.notificationPreferences = p
  }
  for (const k of ['preferredTechnicianIds', 'jobFormIds'] as const) {
    const ids = optIdArray(b, k)
    if (ids !== undefined) fields[k] = ids
  }
  const properties = b.properties === undefined ? undefined : parseProperties(b.properties, schema)
  if (mode === 'create') {
    const has = (v: unknown): boolean => typeof v === 'string' && v.trim() !== ''
    if (!has(fields.firstName) && !has(fields.email)) throw badRequest('Either firstName or email is required')
  }
  return { fields, properties }
}
