// Reference data through the frozen legacy routes (spec: Legacy routes; Legacy-route resources).
// Bearer authentication, no per-key scopes, and payloads that may name the id `id`, `recordId` or
// `_id`; list bodies hold the array in `data` or in one property of it (`data.taxes`, `data.team`).
import type { Payload, RecordRow } from '../src/model/rows.js'
import type { ReferenceStream } from '../src/model/streams.js'
import { col, compileColumns, recordTable, type MappedColumn } from './columns.js'
import { lenientRow } from './define-stream.js'
import { obj, text } from './mapping.js'

type ReferenceDefinition = Omit<ReferenceStream, 'kind' | 'tables' | 'mapColumns'> & {
  description: string
  columns: readonly MappedColumn[]
}

function defineReference({ description, columns, ...stream }: ReferenceDefinition): ReferenceStream {
  const table = recordTable(stream.table, description, columns)
  return { kind: 'reference', ...stream, tables: [table], mapColumns: compileColumns(table) }
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

export function referenceRow(stream: ReferenceStream, p: Payload): RecordRow | undefined {
  const id = legacyId(p) ?? stream.single?.fallbackId
  if (id === undefined) return undefined
  return lenientRow(id, p, stream.mapColumns(p))
}

const IS_ACTIVE = col('is_active', 'flag', 'isActive', 'Active (inactive ones are not selectable).')

export const REFERENCE_STREAMS: readonly ReferenceStream[] = [
  defineReference({
    name: 'items',
    route: '/api/product-service',
    table: 'items',
    description: 'A price-book product or service.',
    columns: [
      col('name', 'text', 'name', 'Name.'),
      col('type', 'text', 'type', 'Service or Product.'),
      col('price', 'real', 'price', 'Default unit price.'),
      col('description', 'text', 'description', 'Description.'),
      IS_ACTIVE,
    ],
  }),
  defineReference({
    name: 'taxes',
    route: '/api/taxes',
    table: 'taxes',
    listKey: 'taxes',
    description: 'A tax code.',
    columns: [col('name', 'text', 'name', 'Name.'), col('rate', 'real', 'rate', 'Decimal rate.')],
  }),
  defineReference({
    name: 'team',
    route: '/api/teams',
    table: 'team_members',
    listKey: 'team',
    description: 'A team member: a user that jobs and visits are assigned to.',
    columns: [
      col('name', 'text', 'name', 'Name, or first and last name joined when the record has no name.', {
        map: (p) => text(p.name) ?? ([text(p.firstName), text(p.lastName)].filter((x) => x !== null).join(' ') || null),
      }),
      col('email', 'text', 'email', 'Email address.'),
      col('role', 'text', 'role.name|role', "The member's role name."),
      IS_ACTIVE,
      col('status', 'text', 'status', 'Active, Inactive or Deleted.'),
    ],
  }),
  defineReference({
    name: 'job_forms',
    route: '/api/job-forms',
    table: 'job_forms',
    listKey: 'jobForms',
    description: 'A job-form template, named in jobFormIds of jobs and clients.',
    columns: [col('name', 'text', 'name|title', 'Name.')],
  }),
  defineReference({
    name: 'company',
    route: '/api/companyInfo',
    table: 'company',
    listKey: 'company',
    single: { fallbackId: 'company' },
    description: "The account's company: one row.",
    columns: [
      col('company_name', 'text', 'companyName|name', 'Company name.'),
      col('email', 'text', 'email', 'Contact email.'),
      col('phone', 'text', 'phone.number|phone|phoneNumber', 'Contact phone number.', {
        map: (p) => (typeof p.phone === 'object' ? obj(p.phone).number : (p.phone ?? p.phoneNumber)),
      }),
      col('timezone', 'text', 'timezone|defaultTimezone', 'Default time zone.'),
      col('currency', 'text', 'currency', 'Currency.'),
    ],
  }),
]

/** The rows of a legacy body, wherever the array sits: `data`, `data.<listKey>`, or the one array property. */
export function legacyRows(data: unknown, stream: ReferenceStream): { rows: Payload[]; shape: string } {
  if (stream.single !== undefined) {
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
