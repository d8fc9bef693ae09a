// Custom objects (spec: Custom object definition and record; Endpoints, Custom objects). Their
// fields differ per account and change at run time, so records are kept whole as JSON and each
// object gets a view generated from its schema; this file maps payloads to rows, nothing more.
import type { Payload, RecordRow, SqlCell } from '../src/model/rows.js'
import type { DiscoveryItem, ObjectSchema } from '../src/model/custom-objects.js'
import { OBJECTS_STREAM, type CustomObjectsStream } from '../src/model/streams.js'
import type { TableSpec } from '../src/model/table-spec.js'
import { col, compileColumns, ID, RAW, RECORD_TAIL, SYNCED_AT, type MappedTable } from './columns.js'
import { recordBase } from './define-stream.js'
import { obj, text } from './mapping.js'

const SLUG = col('slug', 'text', 'slug', "The custom object's slug.", { nullable: false })

/** One row per custom object of the account: its discovery item, schema and view. */
export const customObjectTypesTable: MappedTable = {
  name: 'custom_object_types',
  description: "A custom object of the account: its discovery item, its schema's fields and pipeline, and the view built from them.",
  role: 'data',
  primaryKey: ['slug'],
  columns: [
    SLUG,
    col('name_singular', 'text', 'nameSingular', 'Singular display name.'),
    col('name_plural', 'text', 'namePlural', 'Plural display name.'),
    col('is_child_object', 'flag', 'isChildObject', 'A child object of another one.'),
    col('parent_object_slug', 'text', 'parentObjectSlug', 'The parent object, for a child object.'),
    col('schema_url', 'text', 'schemaUrl', 'The schema route upstream.'),
    col('fields', 'json', 'fields', "The schema's field descriptors, in display order, as JSON."),
    col('pipeline', 'json', 'pipeline', "The schema's pipeline as JSON."),
    col('disabled_at', 'time', undefined, 'When the object was last missing from discovery; NULL while it is listed.'),
    col('view_name', 'text', undefined, 'The view with one column per field (obj_<slug>).'),
    col('raw', 'json', undefined, 'The discovery item and the schema as received, as JSON text.', { nullable: false }),
    SYNCED_AT,
  ],
}

/** Every custom-object record, whatever its object, with its fields as JSON. */
export const customRecordsTable: MappedTable = {
  name: 'custom_records',
  description: 'A record of a custom object; its fields are in data, and the view obj_<slug> shows them as columns.',
  role: 'data',
  primaryKey: ['slug', 'id'],
  columns: [
    { ...SLUG, from: 'object', description: 'The custom object the record belongs to (custom_object_types.slug).' },
    ID,
    col('stage', 'text', 'stage', "The record's stage in the object's pipeline."),
    col('data', 'json', 'data', "The record's fields, keyed by field name, as JSON.", { map: (p) => p.data ?? {} }),
    ...RECORD_TAIL,
  ],
}

/**
 * The client schema's custom fields, the labels behind clients.properties; each row maps from one
 * field descriptor of the schema's `fields` (clientFieldRow).
 */
export const clientFieldsTable: MappedTable = {
  name: 'client_fields',
  description: 'A custom client field from the client schema; clients.properties name them by id (see the client_properties view).',
  role: 'data',
  primaryKey: ['id'],
  columns: [
    col('id', 'text', 'id', 'The field id.', { nullable: false }),
    col('name', 'text', 'name', 'The field name.'),
    col('label', 'text', 'label', 'The display label.'),
    col('type', 'text', 'type', 'The field type.'),
    col('options', 'json', 'options', 'Select options as JSON.'),
    { ...RAW, description: 'The field descriptor as received, as JSON text.' },
    SYNCED_AT,
  ],
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

/**
 * The view of clients.properties with the field labels of client_fields (migration 0007): one row
 * per live client and custom field. A view, not a table: declared for the schema catalog, and its
 * column names are checked against the mirror.
 */
export const clientPropertiesView: TableSpec = {
  name: 'client_properties',
  description: 'One row per live client and custom client field, with the field label (a view over clients and client_fields).',
  role: 'data',
  primaryKey: [],
  columns: [
    col('client_id', 'text', undefined, 'The client (clients.id).'),
    col('field_id', 'text', 'properties[].id', 'The field id (client_fields.id).'),
    col('field_label', 'text', undefined, "The field's label, from client_fields."),
    col('field_name', 'text', undefined, "The field's name, from client_fields."),
    col('value', 'text', 'properties[].value', 'The value as the client holds it.'),
  ],
}

const clientFieldColumns = compileColumns(clientFieldsTable)

/** A client_fields row (but synced_at) from a field descriptor of the client schema; undefined without an id. */
export function clientFieldRow(f: Payload): Record<string, SqlCell> | undefined {
  if (typeof f.id !== 'string' || f.id === '') return undefined
  return { id: f.id, ...clientFieldColumns(f), raw: JSON.stringify(f) }
}

// The slug is the writer's scope, so the mapping leaves it out with the shared columns.
const recordColumns = compileColumns({ ...customRecordsTable, columns: customRecordsTable.columns.filter((c) => c.name !== 'slug') })

/** A record's row in custom_records (the slug is the writer's scope, not a column here). */
export function customRecordToRow(p: Payload): RecordRow {
  const { id, updated_at, raw, created_at } = recordBase(p)
  const columns = recordColumns(p)
  columns.created_at = created_at
  return { id, updated_at, raw, columns }
}

export const customObjects: CustomObjectsStream = {
  kind: 'objects',
  name: OBJECTS_STREAM,
  discoveryRoute: '/api/v1/objects',
  schemaRoute: (slug: string) => `/api/v1/objects/${encodeURIComponent(slug)}/schema`,
  scope: 'objects:read',
  table: customRecordsTable.name,
  typesTable: customObjectTypesTable.name,
  deletions: { events: ['object.deleted'], reconcile: true },
  snapshotEvents: ['object.created', 'object.updated', 'object.stage_changed'],
  // The client schema's fields are read with the discovery (the schema route of the built-in client).
  tables: [customObjectTypesTable, customRecordsTable, clientFieldsTable],
  toRow: customRecordToRow,
  toDiscoveryItem,
  toSchema,
}
