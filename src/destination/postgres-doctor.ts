// The destination's part of `fsm-sync doctor`: can we connect, is the server recent enough, is the
// database UTF8, may we create or write what the replica needs, and do the tables already there
// have the right shape.
// Each failed check says how to fix it; none prints the URL or its password.
import pg from 'pg'
import type { TableSpec } from '../model/table-spec.js'
import { quoteIdentifier } from '../model/sql-names.js'
import { DATABASE_ENCODING_QUERY, shapeProblems, STATE_TABLE, type ExistingColumn } from './postgres-ddl.js'
import { describeTarget, encodingProblem, explainDestinationError } from './postgres-errors.js'

export interface DestinationCheck {
  ok: boolean
  label: string
  detail: string
}

/** Oldest server release the replicator's SQL runs on (jsonb, ON CONFLICT, row comparisons). */
export const MIN_SERVER_VERSION = 120000

export async function postgresChecks(url: string, schema: string, tables: readonly TableSpec[]): Promise<DestinationCheck[]> {
  const target = describeTarget(url)
  const client = new pg.Client({ connectionString: url, application_name: 'fsm-sync doctor', connectionTimeoutMillis: 10_000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
  } catch (err) {
    return [{ ok: false, label: 'Postgres connection', detail: explainDestinationError(err, url, schema).message }]
  }
  const checks: DestinationCheck[] = []
  try {
    const who = (await client.query<{ user: string; db: string }>(`SELECT current_user AS user, current_database() AS db`)).rows[0]!
    checks.push({ ok: true, label: 'Postgres connection', detail: `connected to ${target} as ${who.user}` })
    const version = Number((await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]!.v)
    const text = (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v
    checks.push(
      version >= MIN_SERVER_VERSION
        ? { ok: true, label: 'Postgres server version', detail: text }
        : { ok: false, label: 'Postgres server version', detail: `${text} is too old: upgrade to PostgreSQL 12 or newer` },
    )
    const { encoding } = (await client.query<{ encoding: string }>(DATABASE_ENCODING_QUERY)).rows[0]!
    const badEncoding = encodingProblem(encoding, who.db)
    checks.push({ ok: badEncoding === undefined, label: 'Postgres database encoding', detail: badEncoding ?? encoding })
    checks.push(await privilegeCheck(client, who.user, who.db, schema, tables))
    const columns = (
      await client.query<ExistingColumn>(
        `SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = $1`,
        [schema],
      )
    ).rows
    const problems = tables.flatMap((t) => shapeProblems(schema, t, columns, undefined))
    checks.push(
      problems.length === 0
        ? { ok: true, label: `Postgres tables in schema ${schema}`, detail: describeTables(columns, tables) }
        : { ok: false, label: `Postgres tables in schema ${schema}`, detail: problems.join('; ') },
    )
    return checks
  } catch (err) {
    checks.push({ ok: false, label: 'Postgres checks', detail: explainDestinationError(err, url, schema).message })
    return checks
  } finally {
    await client.end().catch(() => undefined)
  }
}

function describeTables(columns: readonly ExistingColumn[], tables: readonly TableSpec[]): string {
  const present = tables.filter((t) => columns.some((c) => c.table_name === t.name)).length
  if (present === 0) return `none yet: ${tables.length} tables are created at the first run`
  return `${present} of ${tables.length} tables present, with the expected column types`
}

/** What the replicator does to each table: read, upsert and delete (a load deletes its account's rows: no TRUNCATE). */
const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const

/**
 * Whether `user` may keep the replica: each privilege checked on its own (has_*_privilege with a
 * list is true when any one of them is held). The schema needs USAGE; each table already there
 * needs every one of TABLE_PRIVILEGES, whoever owns it; a missing table needs CREATE on the schema.
 * The fix names the GRANTs and the role that can run them (the owner of the schema or the tables).
 */
async function privilegeCheck(
  client: pg.Client,
  user: string,
  db: string,
  schema: string,
  tables: readonly TableSpec[],
): Promise<DestinationCheck> {
  const label = `Postgres privileges on schema ${schema}`
  const ns = (
    await client.query<{ owner: string; usage: boolean; create: boolean }>(
      `SELECT pg_get_userbyid(nspowner) AS owner, has_schema_privilege(oid, 'USAGE') AS usage, has_schema_privilege(oid, 'CREATE') AS create
         FROM pg_namespace WHERE nspname = $1`,
      [schema],
    )
  ).rows[0]
  if (ns === undefined) {
    const may = (await client.query<{ ok: boolean }>(`SELECT has_database_privilege(current_database(), 'CREATE') AS ok`)).rows[0]!.ok
    return may
      ? { ok: true, label, detail: `the schema does not exist yet; ${user} may create it` }
      : {
          ok: false,
          label,
          detail: `the schema does not exist and ${user} may not create it: run GRANT CREATE ON DATABASE ${quoteIdentifier(db)} TO ${quoteIdentifier(user)}; or CREATE SCHEMA ${quoteIdentifier(schema)} AUTHORIZATION ${quoteIdentifier(user)}; as an owner`,
        }
  }
  const names = [...tables.map((t) => t.name), STATE_TABLE]
  const present = (
    await client.query<{ name: string; owner: string; lacking: string[] }>(
      `SELECT c.relname AS name, pg_get_userbyid(c.relowner) AS owner,
              array_remove(ARRAY[${TABLE_PRIVILEGES.map((p) => `CASE WHEN has_table_privilege(c.oid, '${p}') THEN NULL ELSE '${p}' END`).join(', ')}], NULL) AS lacking
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = ANY($2) AND c.relkind IN ('r', 'p')`,
      [schema, names],
    )
  ).rows.sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name))
  const missing = names.filter((n) => !present.some((p) => p.name === n))
  const unwritable = present.filter((p) => p.lacking.length > 0)
  const schemaGrants = [...(ns.usage ? [] : ['USAGE']), ...(missing.length > 0 && !ns.create ? ['CREATE'] : [])]
  if (schemaGrants.length === 0 && unwritable.length === 0) {
    const detail =
      missing.length === 0
        ? `${user} may write every table of the replica${ns.create ? '' : ' (it may not create new ones)'}`
        : `${user} may create the replica's missing tables${present.length > 0 ? ' and write those there' : ''}`
    return { ok: true, label, detail }
  }
  const lacks: string[] = []
  const fixes: string[] = []
  if (schemaGrants.length > 0) {
    lacks.push(`${schemaGrants.join(' and ')} on the schema${ns.usage ? ` (to create ${list(missing)})` : ''}`)
    fixes.push(
      `as ${ns.owner} (the schema's owner) GRANT ${schemaGrants.join(', ')} ON SCHEMA ${quoteIdentifier(schema)} TO ${quoteIdentifier(user)};`,
    )
  }
  if (unwritable.length > 0) {
    const privileges = TABLE_PRIVILEGES.filter((p) => unwritable.some((t) => t.lacking.includes(p)))
    lacks.push(`${privileges.join(', ')} on ${list(unwritable.map((t) => t.name))}`)
    // GRANT ... ON ALL TABLES grants only what its runner owns: once per owner of a table lacking privileges.
    for (const owner of [...new Set(unwritable.map((t) => t.owner))]) {
      fixes.push(
        `as ${owner} (owner of ${list(unwritable.filter((t) => t.owner === owner).map((t) => t.name))}) GRANT ${TABLE_PRIVILEGES.join(', ')} ON ALL TABLES IN SCHEMA ${quoteIdentifier(schema)} TO ${quoteIdentifier(user)};`,
      )
    }
  }
  return { ok: false, label, detail: `${user} lacks ${lacks.join('; and ')}: run ${fixes.join(' then ')}` }
}

function list(names: readonly string[]): string {
  return `${names.slice(0, 5).join(', ')}${names.length > 5 ? `, ... (${names.length})` : ''}`
}
