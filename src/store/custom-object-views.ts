// One SQL view per custom object, `obj_<slug>`, with one column per schema field. Slugs
// and field names come from the account, so they are only ever SQL string literals or quoted
// identifiers, never pasted into SQL as they are. Pure: returns the statements to run.

export interface FieldDescriptor {
  name: string
  type?: string | undefined
  relation?: { multi?: boolean | undefined } | null | undefined
}

const RESERVED = new Set(['id', 'stage', 'created_at', 'updated_at', 'deleted_at', 'synced_at'])

/** A SQL identifier, double-quoted with embedded quotes doubled. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** A SQL string literal, single-quoted with embedded quotes doubled. */
export function quoteText(value: string): string {
  return `'${value.replace(/'/g, "''")}'`
}

/** The view's name for a slug: `obj_` plus the slug with anything unusual replaced. */
export function viewName(slug: string): string {
  return `obj_${slug.replace(/[^A-Za-z0-9_]/g, '_')}`
}

/**
 * Column names for the fields, in display order, each unique and not clashing with the view's own
 * columns: a field whose name collides after normalisation (case, or a reserved name) gets a
 * suffix, so two fields named `Status` and `status` both stay reachable.
 */
export function columnNames(fields: readonly FieldDescriptor[]): string[] {
  const taken = new Set([...RESERVED])
  return fields.map((f) => {
    let base = f.name.trim() === '' ? 'field' : f.name
    if (taken.has(base.toLowerCase())) base = `data_${base}`
    let name = base
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base}_${n}`
    taken.add(name.toLowerCase())
    return name
  })
}

/** The expression reading one field of `data`, whatever characters its name holds. */
function fieldExpression(name: string): string {
  // A JSON path label cannot hold a double quote; json_each compares the key as plain text.
  if (name.includes('"')) return `(SELECT value FROM json_each(r.data) WHERE key = ${quoteText(name)})`
  return `json_extract(r.data, ${quoteText(`$."${name}"`)})`
}

export function viewStatements(slug: string, fields: readonly FieldDescriptor[]): string[] {
  const view = quoteIdent(viewName(slug))
  const cols = columnNames(fields)
  const fieldCols = fields.map((f, i) => {
    const expr = fieldExpression(f.name)
    // Multi relations stay JSON arrays; json_extract would otherwise hand back the array as text
    // anyway, so only single relations and scalars differ in nothing but the name.
    return `${expr} AS ${quoteIdent(cols[i]!)}`
  })
  return [
    `DROP VIEW IF EXISTS ${view}`,
    `CREATE VIEW ${view} AS SELECT r.id AS id, r.stage AS stage${fieldCols.map((c) => `, ${c}`).join('')}, r.created_at AS created_at, r.updated_at AS updated_at, r.deleted_at AS deleted_at, r.synced_at AS synced_at FROM custom_records r WHERE r.slug = ${quoteText(slug)}`,
  ]
}
