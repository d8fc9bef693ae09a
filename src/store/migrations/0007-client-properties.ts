// Client custom fields: the client schema route gives the field ids behind
// clients.properties; client_properties shows one row per client and field with its label.
// properties arrive as an array of {id, value} or as an object keyed by field id (spec, Client).
import type { MigrationStatements } from './types.js'

export const clientProperties: MigrationStatements = [
  `CREATE TABLE client_fields (
    id TEXT PRIMARY KEY,
    name TEXT,
    label TEXT,
    type TEXT,
    options TEXT,
    raw TEXT NOT NULL,
    synced_at TEXT NOT NULL
  ) STRICT`,
  `CREATE VIEW client_properties AS
   SELECT c.id AS client_id, p.field_id, f.label AS field_label, f.name AS field_name, p.value
   FROM clients c
   JOIN (
     SELECT c2.id AS client_id,
            CASE WHEN json_type(c2.properties) = 'array' THEN json_extract(e.value, '$.id') ELSE e.key END AS field_id,
            CASE WHEN e.type = 'object' THEN json_extract(e.value, '$.value') ELSE e.value END AS value
     FROM clients c2, json_each(c2.properties) e
     WHERE c2.properties IS NOT NULL AND json_valid(c2.properties)
   ) p ON p.client_id = c.id
   LEFT JOIN client_fields f ON f.id = p.field_id
   WHERE c.deleted_at IS NULL`,
]
