// Custom objects: discovery and schema per slug, and every record as JSON. One view per
// object (obj_<slug>) is generated from the schema at run time, not here.
import type { MigrationStatements } from './types.js'

export const customObjects: MigrationStatements = [
  `CREATE TABLE custom_object_types (
    slug TEXT PRIMARY KEY,
    name_singular TEXT,
    name_plural TEXT,
    is_child_object INTEGER,
    parent_object_slug TEXT,
    schema_url TEXT,
    fields TEXT,
    pipeline TEXT,
    disabled_at TEXT,
    view_name TEXT,
    raw TEXT NOT NULL,
    synced_at TEXT NOT NULL
  ) STRICT`,
  `CREATE TABLE custom_records (
    slug TEXT NOT NULL,
    id TEXT NOT NULL,
    stage TEXT,
    data TEXT,
    created_at TEXT,
    updated_at TEXT NOT NULL,
    deleted_at TEXT,
    raw TEXT NOT NULL,
    synced_at TEXT NOT NULL,
    PRIMARY KEY (slug, id)
  ) STRICT`,
  `CREATE INDEX custom_records_updated_at ON custom_records (slug, updated_at)`,
]
