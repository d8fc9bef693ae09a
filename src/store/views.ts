// The mirror's fixed views, declared like its tables (src/model/table-spec.ts) so that the schema
// catalog and docs/tables.md describe them and exports read them typed. The custom objects' views
// differ per account and are described from the mirror (src/catalog/custom-object-tables.ts).
import type { TableSpec } from '../model/table-spec.js'

/** Created by migration 0007: one row per live client and custom field value, with the field's label. */
export const clientPropertiesView: TableSpec = {
  name: 'client_properties',
  description:
    "A view: one row per custom field value of a client that exists upstream (clients.properties), with the field's label from client_fields.",
  role: 'data',
  primaryKey: ['client_id', 'field_id'],
  columns: [
    { name: 'client_id', kind: 'text', nullable: false, description: 'The client (clients.id).' },
    {
      name: 'field_id',
      kind: 'text',
      nullable: true,
      from: 'properties[].id',
      description: 'The custom field (client_fields.id): the entry id in an array, the key in an object.',
    },
    {
      name: 'field_label',
      kind: 'text',
      nullable: true,
      description: "The field's display label (client_fields.label); NULL for a field the schema does not list.",
    },
    { name: 'field_name', kind: 'text', nullable: true, description: "The field's name (client_fields.name)." },
    {
      name: 'value',
      kind: 'text',
      nullable: true,
      from: 'properties[].value',
      description: 'The value as sent: text (a multi-select is a JSON-encoded array in the text).',
    },
  ],
}

/** Every fixed view of the mirror. */
export const VIEWS: readonly TableSpec[] = [clientPropertiesView]
