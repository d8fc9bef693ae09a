// What the service writes into a custom record's `data` (spec: Custom object definition and
// record): relation values normalised, a `<base>Name` display mirror beside each relation
// `<base>Id`, the stage mirrored into `data[pipeline.fieldName]`, and auto display ids.
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { clientDisplayName } from '../data/docs.js'
import type { State } from '../data/state.js'
import type { FieldDef, ObjectDef } from './object-definitions.js'

const HEX24 = /^[a-fA-F0-9]{24}$/

function oneId(v: unknown, label: string): string[] {
  if (v === null || v === undefined) return []
  if (typeof v === 'number') return [String(v)]
  if (typeof v === 'string')
    return v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
  if (Array.isArray(v)) return v.flatMap((x) => oneId(x, label))
  if (typeof v === 'object') {
    const o = v as Doc
    for (const key of ['$oid', 'id', '_id', 'recordId'])
      if (typeof o[key] === 'string' || typeof o[key] === 'number') return [String(o[key])]
  }
  throw badRequest(`${label}: invalid relation value`)
}

/**
 * Accepted forms: bare id, number, {$oid}, {id}, {_id}, {recordId}, array, comma-separated string.
 * A multi relation stores an array; a single one keeps only the first id; null (or []) clears.
 */
export function normaliseRelation(field: FieldDef, value: unknown): string | string[] | null {
  const multi = field.relation?.multi === true
  if (value === null) return multi ? [] : null
  const ids = oneId(value, field.label)
  if (multi) return ids
  return ids[0] ?? null
}

export function displayName(state: State, target: string, id: string): string | null {
  if (target === 'client') {
    const c = state.clients.get(id)
    return c === undefined ? null : clientDisplayName(c.doc)
  }
  if (target === 'team') {
    const m = state.team.get(id)
    return typeof m?.doc.name === 'string' ? m.doc.name : null
  }
  const def = state.objectDefs.find((d) => d.slug === target)
  const rec = state.objects.get(target)?.get(id)
  if (def === undefined || rec === undefined) return null
  const data = rec.doc.data as Doc
  const name = data[def.displayField]
  return typeof name === 'string' ? name : null
}

/** Relation `<base>Id` fields that get a `<base>Name` mirror. */
export const mirrorKey = (field: FieldDef): string | null =>
  field.type === 'relation' && field.name.endsWith('Id') && field.name.length > 2 ? `${field.name.slice(0, -2)}Name` : null

/** Rewrites the service-owned keys of `data`: relation mirrors and the stage mirror. */
export function serviceOwnedData(state: State, def: ObjectDef, data: Doc, stage: string): Doc {
  const out: Doc = {}
  for (const [key, value] of Object.entries(data)) out[key] = value
  for (const field of def.fields) {
    const mirror = mirrorKey(field)
    if (mirror === null || !(field.name in out)) continue
    const id = out[field.name]
    out[mirror] =
      typeof id === 'string' && HEX24.test(id) && field.relation !== null ? displayName(state, field.relation.targetObject, id) : null
  }
  out[def.pipeline.fieldName] = stage
  return out
}

/** The next `customId`/`customIdCounter` of an object with auto display ids. */
export function nextDisplayId(state: State, def: ObjectDef): Doc {
  if (def.displayIdPrefix === null) return {}
  const n = (state.next.customId.get(def.slug) ?? 0) + 1
  state.next.customId.set(def.slug, n)
  return { customId: `${def.displayIdPrefix}-${String(n).padStart(5, '0')}`, customIdCounter: n }
}

export const firstStage = (def: ObjectDef): string => [...def.pipeline.stages].sort((a, b) => a.order - b.order)[0]?.value ?? ''
