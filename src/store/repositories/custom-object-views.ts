// One SQL view per custom object, `obj_<slug>`, with one column per schema field. Slugs
// and field names come from the account, so they are only ever SQL string literals or quoted
// identifiers, never pasted into SQL as they are. Pure: returns the statements to run.
//
// The names are the same in the mirror and in the Postgres destination (src/destination/postgres-ddl.ts),
// and unique in both: SQLite compares identifiers without case, and Postgres cuts them at 63 bytes.
import { createHash } from 'node:crypto'
import { quoteIdentifier, quoteText } from '../../model/sql-names.js'

export interface FieldDescriptor {
  name: string
  type?: string | undefined
  relation?: { multi?: boolean | undefined } | null | undefined
}

const RESERVED = new Set(['id', 'stage', 'created_at', 'updated_at', 'deleted_at', 'synced_at'])

/** Postgres keeps the first 63 bytes of an identifier (NAMEDATALEN - 1): every name is kept within them. */
export const MAX_IDENTIFIER_BYTES = 63

/** Eight hex digits of the SHA-256 of a name: the stable suffix that keeps a normalised name unique. */
function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8)
}

/** `base` cut (on a character boundary) so that `base + suffix` holds in MAX_IDENTIFIER_BYTES, then the suffix. */
function fit(base: string, suffix: string): string {
  const room = MAX_IDENTIFIER_BYTES - Buffer.byteLength(suffix)
  if (Buffer.byteLength(base) <= room) return base + suffix
  let out = ''
  let bytes = 0
  for (const ch of base) {
    bytes += Buffer.byteLength(ch)
    if (bytes > room) break
    out += ch
  }
  return out + suffix
}

const PLAIN_SLUG = /^[a-z0-9_]+$/
const HASHED = /_[0-9a-f]{8}$/

/**
 * The view's name for a slug. A slug of lower-case letters, digits and `_` gives `obj_<slug>`. Any
 * other slug (another character, a capital, too long for 63 bytes, or ending like a suffix below)
 * gives `obj_` plus the slug with every other character replaced by `_`, cut to fit, plus `_` and
 * eight hex digits of the slug's SHA-256: `pet-care` and `pet_care` get two views. The name depends
 * on the slug alone, so a new object never renames another's view.
 */
export function viewName(slug: string): string {
  const plain = `obj_${slug}`
  if (PLAIN_SLUG.test(slug) && !HASHED.test(slug) && plain.length <= MAX_IDENTIFIER_BYTES) return plain
  return fit(`obj_${slug.replace(/[^A-Za-z0-9_]/g, '_')}`, `_${shortHash(slug)}`)
}

/**
 * Column names for the fields, in display order, each unique and not clashing with the view's own
 * columns: a field whose name collides after normalisation (case, or a reserved name) gets a
 * suffix, so two fields named `Status` and `status` both stay reachable. A name longer than 63
 * bytes is cut and given `_` plus eight hex digits of the field name's SHA-256, so two long names
 * sharing their first 63 bytes stay two columns in Postgres.
 */
export function columnNames(fields: readonly FieldDescriptor[]): string[] {
  const taken = new Set([...RESERVED])
  return fields.map((f) => {
    let base = f.name.trim() === '' ? 'field' : f.name
    if (taken.has(base.toLowerCase())) base = `data_${base}`
    if (Buffer.byteLength(base) > MAX_IDENTIFIER_BYTES) base = fit(base, `_${shortHash(f.name)}`)
    let name = base
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = fit(base, `_${n}`)
    taken.add(name.toLowerCase())
    return name
  })
}

/**
 * The most schema fields a view gives a column (docs/querying.md, Tables): past it, the view keeps the first
 * fields in display order and the others are read from custom_records.data. SQLite refuses a result
 * of more than 2,000 columns (SQLITE_MAX_COLUMN) and Postgres a select list of more than 1,664; a view
 * has six columns of its own, and a query joining it to other tables needs room for theirs.
 */
export const MAX_VIEW_FIELDS = 1500

/**
 * The fields a view has columns for: the one place a view's width is decided, so the mirror's view,
 * the catalog, the export and the Postgres view all agree.
 */
export function viewFields<F extends FieldDescriptor>(fields: readonly F[]): F[] {
  return fields.slice(0, MAX_VIEW_FIELDS)
}

/** Why an object's view lacks some of its fields, naming the object; undefined when it has them all. */
export function viewWidthNote(slug: string, fieldCount: number): string | undefined {
  if (fieldCount <= MAX_VIEW_FIELDS) return undefined
  return `custom object ${slug} has ${fieldCount} schema fields: its view ${viewName(slug)} has columns for the first ${MAX_VIEW_FIELDS} only, the other ${fieldCount - MAX_VIEW_FIELDS} are in custom_records.data (json_extract(data, '$."<field>"'))`
}

/** The expression reading one field of `data`, whatever characters its name holds. */
function fieldExpression(name: string): string {
  // A JSON path label cannot hold a double quote or a backslash; json_each compares the key as plain text.
  if (name.includes('"') || name.includes('\\')) return `(SELECT value FROM json_each(r.data) WHERE key = ${quoteText(name)})`
  return `json_extract(r.data, ${quoteText(`$."${name}"`)})`
}

export function viewStatements(slug: string, schemaFields: readonly FieldDescriptor[]): string[] {
  const view = quoteIdentifier(viewName(slug))
  const fields = viewFields(schemaFields)
  const cols = columnNames(fields)
  const fieldCols = fields.map((f, i) => {
    const expr = fieldExpression(f.name)
    // Multi relations stay JSON arrays; json_extract would otherwise hand back the array as text
    // anyway, so only single relations and scalars differ in nothing but the name.
    return `${expr} AS ${quoteIdentifier(cols[i]!)}`
  })
  return [
    `DROP VIEW IF EXISTS ${view}`,
    `CREATE VIEW ${view} AS SELECT r.id AS id, r.stage AS stage${fieldCols.map((c) => `, ${c}`).join('')}, r.created_at AS created_at, r.updated_at AS updated_at, r.deleted_at AS deleted_at, r.synced_at AS synced_at FROM custom_records r WHERE r.slug = ${quoteText(slug)}`,
  ]
}
