// Validation of a custom record's `data` (spec: Custom objects, "Validation of data keys"):
// unknown keys give 400 `Unknown field(s) in data: <names>`; tolerated are `customIdCounter`, keys
// starting with `__` and a `<base>Name` mirror beside a relation `<base>Id` (all three are dropped,
// the service owns them); `customId` is not tolerated. Values are coerced per field type, relation
// restrictions checked, and required fields checked on the merged result. Validation messages are
// localised from Accept-Language (English and French here).
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { isBusinessClient } from '../data/docs.js'
import type { State } from '../data/state.js'
import type { FieldDef, ObjectDef } from './object-definitions.js'
import { mirrorKey, normaliseRelation } from './record-data.js'

export type Locale = 'en' | 'fr'

export const localeOf = (acceptLanguage: string | undefined): Locale =>
  acceptLanguage?.trim().toLowerCase().startsWith('fr') === true ? 'fr' : 'en'

const MESSAGES = {
  required: { en: (l: string) => `Missing required field(s): ${l}`, fr: (l: string) => `Champ(s) obligatoire(s) manquant(s) : ${l}` },
  restrict: {
    en: (label: string, want: string, got: string) => `${label}: client must be ${want} (got ${got})`,
    fr: (label: string, want: string, got: string) =>
      `${label} : le client doit être ${want === 'business' ? 'une entreprise' : 'un particulier'} (reçu : ${got === 'business' ? 'entreprise' : 'particulier'})`,
  },
  text: { en: (label: string) => `${label}: expected a text value`, fr: (label: string) => `${label} : une valeur texte est attendue` },
  option: {
    en: (label: string, v: string) => `${label}: "${v}" is not one of the options`,
    fr: (label: string, v: string) => `${label} : « ${v} » ne fait pas partie des options`,
  },
} as const

function checkRestriction(state: State, field: FieldDef, value: string | string[] | null, locale: Locale): void {
  if (field.restrictTo === undefined || value === null) return
  for (const id of Array.isArray(value) ? value : [value]) {
    const client = state.clients.live(id)
    if (client === undefined) throw badRequest(`${field.label}: client ${id} not found`)
    const got = isBusinessClient(client.doc) ? 'business' : 'individual'
    if (got !== field.restrictTo) throw badRequest(MESSAGES.restrict[locale](field.label, field.restrictTo, got))
  }
}

/** The coerced data patch; throws 400 for unknown keys and bad values. */
export function validateData(state: State, def: ObjectDef, data: unknown, locale: Locale): Doc {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw badRequest("'data' must be an object keyed by field name")
  const byName = new Map(def.fields.map((f) => [f.name, f]))
  const mirrors = new Set(def.fields.map(mirrorKey).filter((k): k is string => k !== null))
  const unknown: string[] = []
  const out: Doc = {}
  for (const [key, value] of Object.entries(data as Doc)) {
    const field = byName.get(key)
    if (field === undefined) {
      if (key === 'customIdCounter' || key.startsWith('__') || mirrors.has(key)) continue
      unknown.push(key)
      continue
    }
    out[key] = coerce(state, def, field, value, locale)
  }
  if (unknown.length > 0) throw badRequest(`Unknown field(s) in data: ${unknown.join(', ')}`)
  return out
}

function coerce(state: State, def: ObjectDef, field: FieldDef, value: unknown, locale: Locale): unknown {
  if (field.type === 'relation') {
    const v = normaliseRelation(field, value)
    checkRestriction(state, field, v, locale)
    return v
  }
  if (value === null) return null
  if (field.type === 'text') {
    if (typeof value === 'string') return value
    if (typeof value === 'number' || typeof value === 'boolean') return String(value)
    throw badRequest(MESSAGES.text[locale](field.label))
  }
  if (typeof value !== 'string') throw badRequest(MESSAGES.text[locale](field.label))
  // The pipeline field takes any stage value (spec: Custom-object stage, transitions are advisory).
  if (field.name !== def.pipeline.fieldName && field.options !== null && !field.options.some((o) => o.value === value)) {
    throw badRequest(MESSAGES.option[locale](field.label, value))
  }
  return value
}

export function checkRequired(def: ObjectDef, data: Doc, locale: Locale): void {
  const missing = def.fields
    .filter((f) => f.required && (data[f.name] === undefined || data[f.name] === null || data[f.name] === ''))
    .map((f) => f.name)
  if (missing.length > 0) throw badRequest(MESSAGES.required[locale](missing.join(', ')))
}
