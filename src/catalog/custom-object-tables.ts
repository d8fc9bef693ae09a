// The `obj_<slug>` views as TableSpecs, read from the schemas stored in custom_object_types: the same
// field list and the same column names (columnNames) that custom-object-views.ts built the views
// from, so the catalog describes exactly the columns each view has.
import type { ColumnKind, ColumnSpec, TableSpec } from '../model/table-spec.js'
import { columnNames, viewFields, viewName, type FieldDescriptor } from '../store/repositories/custom-object-views.js'
import { CustomObjectTypes, type TypeWithView } from '../store/repositories/custom-object-types.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'

/** One stored custom object type as custom_object_types holds it. */
export type StoredObjectType = TypeWithView

/** The column kind of a schema field: a multi relation is a JSON array, every other value text. */
function fieldKind(field: FieldDescriptor): ColumnKind {
  return field.relation?.multi === true ? 'json' : 'text'
}

function parseFields(slug: string, text: string | null): FieldDescriptor[] {
  if (text === null) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new Error(`custom_object_types.fields of ${slug} is not JSON: ${(err as Error).message}`, { cause: err })
  }
  if (!Array.isArray(parsed)) return []
  return parsed
    .filter((f): f is Record<string, unknown> => typeof f === 'object' && f !== null && typeof (f as { name?: unknown }).name === 'string')
    .map((f) => ({
      name: f.name as string,
      type: typeof f.type === 'string' ? f.type : undefined,
      relation:
        typeof f.relation === 'object' && f.relation !== null ? { multi: (f.relation as { multi?: unknown }).multi === true } : null,
    }))
}

const time = (name: string, description: string, nullable = true): ColumnSpec => ({ name, kind: 'time', nullable, description })

/** The TableSpec of one object's view: id, stage, one column per schema field, the record's times. */
export function customObjectViewSpec(type: StoredObjectType): TableSpec {
  const all = parseFields(type.slug, type.fields)
  const fields = viewFields(all)
  const names = columnNames(fields)
  const label = type.nameSingular ?? type.slug
  const narrowed =
    all.length > fields.length
      ? ` Columns for the first ${fields.length} of its ${all.length} schema fields only (the most a view has); the others are in custom_records.data.`
      : ''
  return {
    name: viewName(type.slug),
    description: `One row per ${label} record (custom object \`${type.slug}\`), one column per schema field; a view over custom_records.${narrowed}${type.disabledAt === null ? '' : ` The object left discovery at ${type.disabledAt}.`}`,
    role: 'data',
    primaryKey: ['id'],
    columns: [
      { name: 'id', kind: 'text', nullable: false, from: 'id', description: 'The record id.' },
      { name: 'stage', kind: 'text', nullable: true, from: 'stage', description: 'The pipeline stage of the record.' },
      ...fields.map((f, i): ColumnSpec => ({
        name: names[i]!,
        kind: fieldKind(f),
        nullable: true,
        from: `data.${f.name}`,
        description: `Schema field \`${f.name}\`${f.type === undefined ? '' : ` (${f.type}${f.relation?.multi === true ? ', multi' : ''})`}.`,
      })),
      time('created_at', 'When the record was created upstream.'),
      time('updated_at', 'When the record last changed upstream.', false),
      time('deleted_at', 'When the mirror found the record deleted upstream; NULL while it exists.'),
      time('synced_at', 'When the mirror last changed the row.', false),
    ],
  }
}

/**
 * The views of every custom object type the mirror holds, in slug order; none when the mirror has
 * no custom_object_types table (a file from before custom objects) or no type yet.
 */
export function customObjectViewSpecs(sqlite: Sqlite): TableSpec[] {
  return new CustomObjectTypes(sqlite).withViews().map(customObjectViewSpec)
}
