// The replica's views: one per custom object (obj_<slug>, postgres-ddl.ts) and the fixed views the
// connectors declare beside the tables (DATA_VIEWS, e.g. client_properties). Each view fsm-sync
// builds carries a comment saying so, and a rebuild drops only views with that comment: views of the
// user's own in the schema, whatever their names, stay.
import type pg from 'pg'
import type { TableSpec } from '../model/table-spec.js'
import { destinationViews } from './destination-tables.js'
import { viewName } from '../store/repositories/custom-object-views.js'
import { quoteIdentifier, quoteText } from '../model/sql-names.js'
import { mergeObjectTypes, OBJECT_TYPES_TABLE, objectViewSql, qualified, type ObjectType } from './postgres-ddl.js'
import { pgType } from './postgres-types.js'

/** The start of the comment on every view fsm-sync builds: what marks it as its own. */
export const VIEW_MARK = 'fsm-sync view'

export interface ViewDefinition {
  /** The view's name in the schema (unquoted). */
  name: string
  /** What it is, for messages. */
  what: string
  /** `CREATE VIEW "schema"."name" ... AS SELECT ...` */
  create: string
  /** Its comment, starting with VIEW_MARK. */
  comment: string
  /**
   * Whether a view of this name without the mark is taken as fsm-sync's: the custom objects' views,
   * which releases before the mark built. A fixed view's name held by a view without it is the user's.
   */
  adoptUnmarked: boolean
}

/**
 * The rows of each declared fixed view in Postgres, with the tables it reads: its columns' names and
 * types come from the declaration (a select list in the declared order, each cast to the type of its
 * column kind). Each follows the mirror's view of the same name (src/store/migrations/).
 */
const FIXED_VIEW_ROWS: Readonly<Record<string, { reads: readonly string[]; from: (schema: string) => string }>> = {
  // clients.properties is an array of {id, value} or an object keyed by field id (spec, Client);
  // a value held as {value} is unwrapped; one row per live client and property.
  client_properties: {
    reads: ['clients', 'client_fields'],
    from: (s) => {
      const value = `CASE WHEN jsonb_typeof(e.value) = 'object' THEN e.value -> 'value' ELSE e.value END`
      return `SELECT c.account_id, c.id AS client_id, p.field_id, f.label AS field_label, f.name AS field_name, p.value #>> '{}' AS value
        FROM ${qualified(s, 'clients')} c
        CROSS JOIN LATERAL (
          SELECT e.value ->> 'id' AS field_id, ${value} AS value
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(c.properties) = 'array' THEN c.properties ELSE '[]'::jsonb END) AS e
          UNION ALL
          SELECT e.key, ${value}
            FROM jsonb_each(CASE WHEN jsonb_typeof(c.properties) = 'object' THEN c.properties ELSE '{}'::jsonb END) AS e
        ) p
        LEFT JOIN ${qualified(s, 'client_fields')} f ON f.account_id = c.account_id AND f.id = p.field_id
        WHERE c.deleted_at IS NULL`
    },
  },
}

/** The names of the declared fixed views that have no Postgres definition here (a test keeps it empty). */
export function undefinedFixedViews(declared: readonly TableSpec[] = destinationViews()): string[] {
  return declared.filter((v) => FIXED_VIEW_ROWS[v.name] === undefined).map((v) => v.name)
}

function fixedView(schema: string, view: TableSpec): ViewDefinition | undefined {
  const rows = FIXED_VIEW_ROWS[view.name]
  if (rows === undefined) return undefined
  const list = [
    `v.account_id::text AS "account_id"`,
    ...view.columns.map((c) => `v.${quoteIdentifier(c.name)}::${pgType(c.kind)} AS ${quoteIdentifier(c.name)}`),
  ].join(', ')
  return {
    name: view.name,
    what: `the view ${view.name}`,
    create: `CREATE VIEW ${qualified(schema, view.name)} AS SELECT ${list} FROM (${rows.from(schema)}) v`,
    comment: `${VIEW_MARK}: ${view.description}`,
    adoptUnmarked: false,
  }
}

/**
 * Every view the replica of `tables` has: each declared fixed view whose tables are replicated, and,
 * when custom_records is, one per custom object of any account (a type without an account is the default's).
 */
export function viewDefinitions(
  schema: string,
  tables: readonly TableSpec[],
  types: readonly (ObjectType & { accountId?: string })[],
): ViewDefinition[] {
  const replicated = new Set(tables.map((t) => t.name))
  const fixed = destinationViews()
    .filter((v) => FIXED_VIEW_ROWS[v.name]?.reads.every((t) => replicated.has(t)) === true)
    .flatMap((v) => fixedView(schema, v) ?? [])
  if (!replicated.has('custom_records')) return fixed
  const merged = mergeObjectTypes(types.map((t) => ({ accountId: 'default', ...t })))
  const objects = merged.map((type): ViewDefinition => ({
    name: viewName(type.slug),
    what: `the view of custom object ${type.slug}`,
    create: objectViewSql(schema, { slug: type.slug, fields: null }, type.fields),
    comment: `${VIEW_MARK}: custom object ${type.slug}, rebuilt when its schema changes`,
    adoptUnmarked: true,
  }))
  return [...fixed, ...objects]
}

/**
 * Brings the schema's views to `views`, each in a savepoint of the caller's transaction: a view
 * Postgres refuses (a user's view depends on a column it would drop) is kept as it was and named in
 * the failures returned. A view whose columns were only appended to is replaced in place (grants and
 * dependent views survive). Views fsm-sync built that are no longer wanted are dropped; no other,
 * and a user's view in the way of one is left alone (a failure that names it).
 */
export async function buildViews(client: pg.Client, schema: string, views: readonly ViewDefinition[]): Promise<string[]> {
  const failures: string[] = []
  const existing = new Map(
    (
      await client.query<{ name: string; mine: boolean }>(
        `SELECT c.relname AS name, starts_with(coalesce(obj_description(c.oid, 'pg_class'), ''), $2) AS mine
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'v'`,
        [schema, VIEW_MARK],
      )
    ).rows.map((r) => [r.name, r.mine]),
  )
  const attempt = async (what: string, ...statements: string[][]): Promise<void> => {
    for (const [i, sqls] of statements.entries()) {
      await client.query('SAVEPOINT fsm_view')
      try {
        for (const sql of sqls) await client.query(sql)
        await client.query('RELEASE SAVEPOINT fsm_view')
        return
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT fsm_view')
        await client.query('RELEASE SAVEPOINT fsm_view')
        if (i === statements.length - 1) failures.push(`${what}: ${(err as Error).message}`)
      }
    }
  }
  for (const v of views) {
    const name = qualified(schema, v.name)
    if (existing.get(v.name) === false && !v.adoptUnmarked) {
      failures.push(`${v.what}: a view ${name} that fsm-sync did not build is in the way (rename or drop it)`)
      continue
    }
    const comment = `COMMENT ON VIEW ${name} IS ${quoteText(v.comment)}`
    // Postgres replaces a view in place when its columns are the old ones with more appended; else drop and create.
    await attempt(
      v.what,
      [v.create.replace(/^CREATE VIEW /, 'CREATE OR REPLACE VIEW '), comment],
      [`DROP VIEW IF EXISTS ${name}`, v.create, comment],
    )
  }
  const wanted = new Set(views.map((v) => v.name))
  for (const [name, mine] of existing) {
    if (mine && !wanted.has(name)) await attempt(`dropping the view ${name}`, [`DROP VIEW IF EXISTS ${qualified(schema, name)}`])
  }
  return failures
}

/**
 * Records one account's custom objects and brings the views to the union of every account's, in the
 * caller's transaction; one account at a time (a transaction lock), so that each rebuild sees the
 * others' objects. Returns the views Postgres refused (buildViews).
 */
export async function buildAccountViews(
  client: pg.Client,
  schema: string,
  accountId: string,
  tables: readonly TableSpec[],
  types: readonly ObjectType[],
): Promise<string[]> {
  const table = qualified(schema, OBJECT_TYPES_TABLE)
  await client.query(`SELECT pg_advisory_xact_lock(hashtext('fsm-sync views'), hashtext($1))`, [schema])
  await client.query(`DELETE FROM ${table} WHERE account_id = $1`, [accountId])
  if (types.length > 0) {
    await client.query(
      `INSERT INTO ${table} (account_id, slug, fields) SELECT $1, t.slug, t.fields FROM jsonb_to_recordset($2::jsonb) AS t(slug text, fields text)`,
      [accountId, JSON.stringify(types.map((t) => ({ slug: t.slug, fields: t.fields })))],
    )
  }
  const all = (
    await client.query<{ accountId: string; slug: string; fields: string | null }>(
      `SELECT account_id AS "accountId", slug, fields FROM ${table}`,
    )
  ).rows
  return buildViews(client, schema, viewDefinitions(schema, tables, all))
}
