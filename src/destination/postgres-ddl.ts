// The destination's schema, derived from the table declarations (TableSpec) and the custom objects'
// schema fields: CREATE TABLE per mirror table, the bookkeeping table, the check of a table that is
// already there, and one view per custom object. Pure: returns SQL text and problems.
import { toSchema } from '../../connectors/custom-objects.js'
import type { ColumnSpec, TableSpec } from '../model/table-spec.js'
import { quoteIdentifier, quoteText } from '../model/sql-names.js'
import { columnNames, viewFields, viewName, type FieldDescriptor } from '../store/repositories/custom-object-views.js'
import { INFORMATION_SCHEMA_TYPE, pgType } from './postgres-types.js'

/** The bookkeeping table: one row per account replicated into this schema. */
export const STATE_TABLE = '_fsm_sync_state'

/** The column every table of the replica starts with, first in its primary key: the account a row belongs to. */
export const ACCOUNT_COLUMN = 'account_id'

/** A table's primary key in the replica: the account, then the mirror's key. */
export function replicaKey(table: TableSpec): string[] {
  return [ACCOUNT_COLUMN, ...table.primaryKey]
}

export function qualified(schema: string, name: string): string {
  return `${quoteIdentifier(schema)}.${quoteIdentifier(name)}`
}

function columnDefinition(table: TableSpec, column: ColumnSpec): string {
  // A time column may hold text that is not an instant, which becomes NULL: never NOT NULL, unless a key.
  const notNull = table.primaryKey.includes(column.name) || (!column.nullable && column.kind !== 'time')
  return `${quoteIdentifier(column.name)} ${pgType(column.kind)}${notNull ? ' NOT NULL' : ''}`
}

export function createTableSql(schema: string, table: TableSpec): string {
  const defs = [`${quoteIdentifier(ACCOUNT_COLUMN)} text NOT NULL`, ...table.columns.map((c) => columnDefinition(table, c))]
  if (table.primaryKey.length > 0) defs.push(`PRIMARY KEY (${replicaKey(table).map(quoteIdentifier).join(', ')})`)
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, table.name)} (${defs.join(', ')})`
}

/** The name of a child table's index on its account and parent (childIndexSql); before accounts, `<table>_<parent>` held the parent alone. */
export function childIndexName(table: TableSpec, before = false): string | undefined {
  if (table.parent === undefined || table.primaryKey[0] === table.parent.column) return undefined
  return (before ? `${table.name}_${table.parent.column}` : `${table.name}_${ACCOUNT_COLUMN}_${table.parent.column}`).slice(0, 63)
}

/** Indexes the apply path needs: a child table is replaced by its account's and parent's ids. */
export function indexSql(schema: string, table: TableSpec): string[] {
  const name = childIndexName(table)
  if (name === undefined) return []
  return [
    `CREATE INDEX IF NOT EXISTS ${quoteIdentifier(name)} ON ${qualified(schema, table.name)} (${quoteIdentifier(ACCOUNT_COLUMN)}, ${quoteIdentifier(table.parent!.column)})`,
  ]
}

export function createStateTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, STATE_TABLE)} (
    account_id text NOT NULL,
    id text NOT NULL,
    seq bigint NOT NULL,
    tables_hash text NOT NULL,
    views_hash text,
    loaded_seq bigint NOT NULL,
    loaded_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, id)
  )`
}

export interface ExistingColumn {
  table_name: string
  column_name: string
  data_type: string
}

/**
 * What makes an existing table unusable (a column of another type, another primary key), one
 * message each with the fix. Missing columns are not a problem: the replicator adds them and loads
 * the replica again (recreatedReason).
 */
export function shapeProblems(
  schema: string,
  table: TableSpec,
  existing: readonly ExistingColumn[],
  primaryKey: readonly string[] | undefined,
): string[] {
  const problems: string[] = []
  const have = new Map(existing.filter((c) => c.table_name === table.name).map((c) => [c.column_name, c.data_type]))
  if (have.size === 0) return problems
  const fix = `drop it (DROP TABLE ${qualified(schema, table.name)}; with CASCADE if views depend on it: fsm-sync creates and loads it again, and builds its own views again) or set FSM_POSTGRES_SCHEMA to another schema`
  for (const c of table.columns) {
    const type = have.get(c.name)
    const want = INFORMATION_SCHEMA_TYPE[pgType(c.kind)]
    if (type !== undefined && type !== want) {
      problems.push(
        `${qualified(schema, table.name)} has column ${quoteIdentifier(c.name)} of type ${type} where ${want} is expected: ${fix}`,
      )
    }
  }
  if (primaryKey !== undefined && primaryKey.join(',') !== replicaKey(table).join(',')) {
    const pk = primaryKey.length === 0 ? 'no primary key' : `primary key (${primaryKey.join(', ')})`
    problems.push(`${qualified(schema, table.name)} has ${pk} where (${replicaKey(table).join(', ')}) is expected: ${fix}`)
  }
  return problems
}

export function missingColumnsSql(schema: string, table: TableSpec, existing: readonly ExistingColumn[]): string[] {
  const have = new Set(existing.filter((c) => c.table_name === table.name).map((c) => c.column_name))
  if (have.size === 0) return []
  return table.columns
    .filter((c) => !have.has(c.name))
    .map((c) => `ALTER TABLE ${qualified(schema, table.name)} ADD COLUMN ${quoteIdentifier(c.name)} ${pgType(c.kind)}`)
}

/**
 * Why the replica must be loaded again after the DDL creates what is missing: a table gone (dropped
 * by hand, as the fix for a table of another shape says) or a column gone comes back empty, while
 * the cursor says its rows are in. Null when every table is there whole, or none is (a new replica).
 */
export function recreatedReason(tables: readonly TableSpec[], existing: readonly ExistingColumn[]): string | null {
  const have = new Set(existing.map((c) => `${c.table_name}.${c.column_name}`))
  const present = new Set(existing.map((c) => c.table_name))
  if (!tables.some((t) => present.has(t.name))) return null
  const tablesCreated = tables.filter((t) => !present.has(t.name)).map((t) => t.name)
  const columnsAdded = tables
    .filter((t) => present.has(t.name))
    .flatMap((t) => t.columns.filter((c) => !have.has(`${t.name}.${c.name}`)).map((c) => `${t.name}.${c.name}`))
  if (tablesCreated.length === 0 && columnsAdded.length === 0) return null
  const what = [
    ...(tablesCreated.length === 0 ? [] : [`table${tablesCreated.length > 1 ? 's' : ''} ${tablesCreated.join(', ')}`]),
    ...(columnsAdded.length === 0 ? [] : [`column${columnsAdded.length > 1 ? 's' : ''} ${columnsAdded.join(', ')}`]),
  ]
  return `fsm-sync created the missing ${what.join(' and the ')}`
}

/** A custom object as the mirror stores it in custom_object_types: the slug and its schema fields (JSON text). */
export interface ObjectType {
  slug: string
  fields: string | null
}

/** The field descriptors of a stored schema, parsed the same way as when the mirror built its view. */
export function fieldDescriptors(fields: string | null): FieldDescriptor[] {
  if (fields === null) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(fields)
  } catch {
    return []
  }
  return toSchema({ fields: Array.isArray(parsed) ? parsed : [] }).fields
}

/** A field of a view over every account's schema of its object: read as text when two accounts type it differently. */
export interface ViewField extends FieldDescriptor {
  asText?: boolean
}

/** What a field's column holds in the view: a conflict between two accounts is settled as text. */
function fieldKind(field: FieldDescriptor): 'jsonb' | 'number' | 'boolean' | 'text' {
  if (field.relation?.multi === true) return 'jsonb'
  switch (field.type) {
    case 'number':
    case 'currency':
    case 'decimal':
      return 'number'
    case 'boolean':
    case 'checkbox':
      return 'boolean'
    default:
      return 'text'
  }
}

/** A custom object as one account's mirror stores it. */
export interface AccountObjectType extends ObjectType {
  accountId: string
}

/**
 * The objects of every account, each with the union of its fields in the accounts' order (by id,
 * then each schema's order); a field two accounts give different kinds (number, boolean, relation
 * list, text) is read as text.
 */
export function mergeObjectTypes(types: readonly AccountObjectType[]): { slug: string; fields: ViewField[] }[] {
  const bySlug = new Map<string, Map<string, ViewField>>()
  for (const t of [...types].sort((a, b) => (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0))) {
    const fields = bySlug.get(t.slug) ?? new Map<string, ViewField>()
    bySlug.set(t.slug, fields)
    for (const f of fieldDescriptors(t.fields)) {
      const seen = fields.get(f.name)
      if (seen === undefined) fields.set(f.name, f)
      else if (seen.asText !== true && fieldKind(seen) !== fieldKind(f)) fields.set(f.name, { name: f.name, asText: true })
    }
  }
  return [...bySlug].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([slug, fields]) => ({ slug, fields: [...fields.values()] }))
}

/**
 * One field's value in the view. Scalars come out typed when the field's type says so (a value of
 * another JSON type reads as NULL rather than failing the query); a multi relation stays a jsonb
 * array; anything else is the text JSON would give.
 */
function fieldExpression(field: ViewField): string {
  const value = `r.data::jsonb -> ${quoteText(field.name)}`
  const text = `r.data::jsonb ->> ${quoteText(field.name)}`
  if (field.asText === true) return text
  switch (fieldKind(field)) {
    case 'jsonb':
      return value
    case 'number':
      return `CASE WHEN jsonb_typeof(${value}) = 'number' THEN (${value})::double precision END`
    case 'boolean':
      return `CASE WHEN jsonb_typeof(${value}) = 'boolean' THEN (${value})::boolean END`
    default:
      return text
  }
}

/**
 * The view of one custom object over the replicated custom_records of every account that has it,
 * with the same name and column names as the mirror's view (src/store/repositories/custom-object-views.ts) plus
 * account_id first: the names come from the same functions, and every name from the account is quoted.
 */
// The fields come last: a field added upstream appends a column, which CREATE OR REPLACE VIEW allows in place.
export function objectViewSql(schema: string, type: ObjectType, merged?: readonly ViewField[]): string {
  const fields = viewFields(merged ?? fieldDescriptors(type.fields))
  const cols = columnNames(fields)
  const fieldCols = fields.map((f, i) => `, ${fieldExpression(f)} AS ${quoteIdentifier(cols[i]!)}`).join('')
  const slug = quoteText(type.slug)
  // An account without the object (in the types table) contributes no rows.
  const hasObject = `EXISTS (SELECT 1 FROM ${qualified(schema, OBJECT_TYPES_TABLE)} t WHERE t.account_id = r.account_id AND t.slug = ${slug})`
  return `CREATE VIEW ${qualified(schema, viewName(type.slug))} AS SELECT r.account_id AS account_id, r.id AS id, r.stage AS stage, r.created_at AS created_at, r.updated_at AS updated_at, r.deleted_at AS deleted_at, r.synced_at AS synced_at${fieldCols} FROM ${qualified(schema, 'custom_records')} r WHERE r.slug = ${slug} AND ${hasObject}`
}

/** Every account's custom objects, as its mirror last had them: what the obj_ views are the union of. */
export const OBJECT_TYPES_TABLE = '_fsm_sync_object_types'

export function createObjectTypesTableSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(schema, OBJECT_TYPES_TABLE)} (account_id text NOT NULL, slug text NOT NULL, fields text, PRIMARY KEY (account_id, slug))`
}

/** The query giving the current database's encoding (pg_encoding_to_char: `UTF8`, `LATIN1`, ...). */
export const DATABASE_ENCODING_QUERY = `SELECT pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()`
