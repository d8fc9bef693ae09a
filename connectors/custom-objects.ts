// Custom objects (spec: Custom object definition and record; Endpoints, Custom objects). Their
// fields differ per account and change at run time, so records are kept whole as JSON and each
// object gets a view generated from its schema; this file maps payloads to rows, nothing more.
import type { RecordRow } from '../src/store/record-writer.js'
import { recordBase } from './define-stream.js'
import { json, obj, text, type Payload } from './mapping.js'

export const customObjects = {
  name: 'objects',
  discoveryRoute: '/api/v1/objects',
  schemaRoute: (slug: string) => `/api/v1/objects/${encodeURIComponent(slug)}/schema`,
  scope: 'objects:read',
  table: 'custom_records',
  typesTable: 'custom_object_types',
  deletions: { events: ['object.deleted'], reconcile: true },
  snapshotEvents: ['object.created', 'object.updated', 'object.stage_changed'],
} as const

export interface DiscoveryItem {
  slug: string
  raw: Payload
}

export interface ObjectSchema {
  fields: { name: string; id?: string; label?: string; type?: string; relation?: { multi?: boolean } | null }[]
  pipeline: unknown
  raw: Payload
}

export function toDiscoveryItem(p: Payload): DiscoveryItem | undefined {
  const slug = text(p.slug)
  return slug === null || slug === '' ? undefined : { slug, raw: p }
}

export function toSchema(p: Payload): ObjectSchema {
  const fields = Array.isArray(p.fields) ? p.fields.map(obj) : []
  return {
    fields: fields
      .filter((f) => typeof f.name === 'string')
      .map((f) => ({
        name: f.name as string,
        ...(typeof f.id === 'string' ? { id: f.id } : {}),
        ...(typeof f.label === 'string' ? { label: f.label } : {}),
        ...(typeof f.type === 'string' ? { type: f.type } : {}),
        relation: f.relation === null || f.relation === undefined ? null : { multi: obj(f.relation).multi === true },
      })),
    pipeline: p.pipeline ?? null,
    raw: p,
  }
}

/** A record's row in custom_records (the slug is the writer's scope, not a column here). */
export function customRecordToRow(p: Payload): RecordRow {
  const { id, updated_at, raw, created_at } = recordBase(p)
  return { id, updated_at, raw, columns: { stage: text(p.stage), data: json(p.data ?? {}), created_at } }
}
