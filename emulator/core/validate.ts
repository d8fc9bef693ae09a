// Body validation shared by the v1 write routes. The rule of spec Conventions 7: a key outside the
// documented list is answered with 400 naming it; nothing is silently discarded.
import type { Doc } from './collection.js'
import { badRequest } from './http-error.js'

export const OBJECT_ID = /^[a-fA-F0-9]{24}$/

export function asObject(body: unknown): Doc {
  if (body === undefined) return {}
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('Request body must be a JSON object')
  return body as Doc
}

export function rejectUnknown(body: Doc, allowed: readonly string[], why = 'is not accepted here'): void {
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k))
  if (unknown.length > 0) throw badRequest(`Unknown or disallowed field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (${why})`)
}

export function optString(body: Doc, key: string): string | null | undefined {
  const v = body[key]
  if (v === undefined || v === null) return v
  if (typeof v !== 'string') throw badRequest(`'${key}' must be a string`)
  return v
}

export function optNumber(body: Doc, key: string): number | undefined {
  const v = body[key]
  if (v === undefined) return undefined
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`'${key}' must be a number`)
  return v
}

export function optBoolean(body: Doc, key: string): boolean | undefined {
  const v = body[key]
  if (v === undefined) return undefined
  if (typeof v !== 'boolean') throw badRequest(`'${key}' must be a boolean`)
  return v
}

export function optIdArray(body: Doc, key: string): string[] | undefined {
  const v = body[key]
  if (v === undefined) return undefined
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && OBJECT_ID.test(x)))
    throw badRequest(`'${key}' must be an array of 24-hex ids`)
  return v as string[]
}

export function optEnum(body: Doc, key: string, values: readonly string[]): string | undefined {
  const v = body[key]
  if (v === undefined) return undefined
  if (typeof v !== 'string' || !values.includes(v)) throw badRequest(`'${key}' must be one of: ${values.join(', ')}`)
  return v
}

const PHONE_KEYS = ['countryCode', 'number', 'countryIdentifier'] as const
const ADDRESS_STRINGS = ['street', 'city', 'state', 'country', 'zipCode', 'formattedAddress', 'houseNumber', 'plusCode'] as const

/** PhoneNumber (spec: Shared types): string fields only. */
export function optPhone(body: Doc, key: string): Doc | null | undefined {
  return optShape(body, key, PHONE_KEYS, [])
}

/** DetailedAddress (spec: Shared types); earlier-revision keys such as `zip` or `lat` are refused. */
export function optAddress(body: Doc, key: string): Doc | null | undefined {
  return optShape(body, key, ADDRESS_STRINGS, ['latitude', 'longitude'])
}

function optShape(body: Doc, key: string, strings: readonly string[], numbers: readonly string[]): Doc | null | undefined {
  const v = body[key]
  if (v === undefined || v === null) return v
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest(`'${key}' must be an object`)
  const o = v as Doc
  const out: Doc = {}
  for (const [k, x] of Object.entries(o)) {
    if (strings.includes(k)) {
      if (typeof x !== 'string' && x !== null) throw badRequest(`'${key}.${k}' must be a string`)
    } else if (numbers.includes(k)) {
      if (typeof x !== 'number' && x !== null) throw badRequest(`'${key}.${k}' must be a number`)
    } else throw badRequest(`Unknown field: ${key}.${k}`)
    out[k] = x
  }
  return out
}

export function requireId(id: string | undefined, what = 'id'): string {
  if (id === undefined || !OBJECT_ID.test(id)) throw badRequest(`Invalid ${what}: expected a 24-character hexadecimal id`)
  return id
}
