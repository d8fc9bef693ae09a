// Reference data through the frozen legacy routes (spec: Legacy routes; Legacy-route resources).
// Bearer authentication, no per-key scopes, and payloads that may name the id `id`, `recordId` or
// `_id`; list bodies hold the array in `data` or in one property of it (`data.taxes`, `data.team`).
import type { RecordRow, SqlValue } from '../src/store/record-writer.js'
import { canonicalTimeOrText } from '../src/store/timestamps.js'
import { flag, obj, real, text, type Payload } from './mapping.js'

export interface ReferenceStream {
  name: string
  route: string
  table: string
  /** Property of `data` holding the array, when `data` is not the array itself. */
  listKey?: string
  /** A single object rather than a list (company). */
  single?: boolean
  columns: (p: Payload) => Record<string, SqlValue>
}

/** The record's id under any of the legacy names, normalised to `id`. */
export function legacyId(p: Payload): string | undefined {
  for (const k of ['id', '_id', 'recordId'] as const) {
    const v = p[k]
    if (typeof v === 'string' && v !== '') return v
    if (typeof v === 'object' && v !== null && typeof (v as { $oid?: unknown }).$oid === 'string') return (v as { $oid: string }).$oid
  }
  return undefined
}

export function referenceRow(stream: ReferenceStream, p: Payload, fallbackId?: string): RecordRow | undefined {
  const id = legacyId(p) ?? fallbackId
  if (id === undefined) return undefined
  return {
    id,
    updated_at: canonicalTimeOrText(p.updatedAt) ?? '',
    raw: JSON.stringify(p),
    columns: { created_at: canonicalTimeOrText(p.createdAt), ...stream.columns(p) },
  }
}

export const REFERENCE_STREAMS: readonly ReferenceStream[] = [
  {
    name: 'items',
    route: '/api/product-service',
    table: 'items',
    columns: (p) => ({
      name: text(p.name),
      type: text(p.type),
      price: real(p.price),
      description: text(p.description),
      is_active: flag(p.isActive),
    }),
  },
  { name: 'taxes', route: '/api/taxes', table: 'taxes', listKey: 'taxes', columns: (p) => ({ name: text(p.name), rate: real(p.rate) }) },
  {
    name: 'team',
    route: '/api/teams',
    table: 'team_members',
    listKey: 'team',
    columns: (p) => ({
      name: text(p.name) ?? ([text(p.firstName), text(p.lastName)].filter((x) => x !== null).join(' ') || null),
      email: text(p.email),
      role: text(obj(p.role).name ?? p.role),
      is_active: flag(p.isActive),
      status: text(p.status),
    }),
  },
  {
    name: 'job_forms',
    route: '/api/job-forms',
    table: 'job_forms',
    listKey: 'jobForms',
    columns: (p) => ({ name: text(p.name ?? p.title) }),
  },
  {
    name: 'company',
    route: '/api/companyInfo',
    table: 'company',
    listKey: 'company',
    single: true,
    columns: (p) => ({
      company_name: text(p.companyName ?? p.name),
      email: text(p.email),
      phone: text(typeof p.phone === 'object' ? obj(p.phone).number : (p.phone ?? p.phoneNumber)),
      timezone: text(p.timezone ?? p.defaultTimezone),
      currency: text(p.currency),
    }),
  },
]

/** The rows of a legacy body, wherever the array sits: `data`, `data.<listKey>`, or the one array property. */
export function legacyRows(data: unknown, stream: ReferenceStream): { rows: Payload[]; shape: string } {
  if (stream.single === true) {
    const o = obj(data)
    const inner = stream.listKey !== undefined && typeof o[stream.listKey] === 'object' ? obj(o[stream.listKey]) : o
    return { rows: Object.keys(inner).length === 0 ? [] : [inner], shape: inner === o ? 'data' : `data.${stream.listKey ?? ''}` }
  }
  if (Array.isArray(data)) return { rows: data.map(obj), shape: 'data[]' }
  const o = obj(data)
  if (stream.listKey !== undefined && Array.isArray(o[stream.listKey]))
    return { rows: (o[stream.listKey] as unknown[]).map(obj), shape: `data.${stream.listKey}[]` }
  const arrays = Object.entries(o).filter(([, v]) => Array.isArray(v))
  if (arrays.length === 1) return { rows: (arrays[0]![1] as unknown[]).map(obj), shape: `data.${arrays[0]![0]}[]` }
  throw new TypeError(`no list found in the body of ${stream.route} (keys: ${Object.keys(o).join(', ') || 'none'})`)
}
