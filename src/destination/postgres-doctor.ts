// The destination's part of `fsm-sync doctor`: can we connect, is the server recent enough, may we
// create or write what the replica needs, and do the tables already there have the right shape.
// Each failed check says how to fix it; none prints the URL or its password.
import pg from 'pg'
import type { TableSpec } from '../model/table-spec.js'
import { qualified, shapeProblems, type ExistingColumn } from './postgres-ddl.js'
import { describeTarget, explainDestinationError } from './postgres-errors.js'

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

async function privilegeCheck(
  client: pg.Client,
  user: string,
  db: string,
  schema: string,
  tables: readonly TableSpec[],
): Promise<DestinationCheck> {
  const label = `Postgres privileges on schema ${schema}`
  const exists = (await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [schema])).rowCount! > 0
  if (!exists) {
    const may = (await client.query<{ ok: boolean }>(`SELECT has_database_privilege(current_database(), 'CREATE') AS ok`)).rows[0]!.ok
    return may
      ? { ok: true, label, detail: `the schema does not exist yet; ${user} may create it` }
      : {
          ok: false,
          label,
          detail: `the schema does not exist and ${user} may not create it: run GRANT CREATE ON DATABASE "${db}" TO "${user}"; or CREATE SCHEMA "${schema}" AUTHORIZATION "${user}"; as an owner`,
        }
  }
  const create = (await client.query<{ ok: boolean }>(`SELECT has_schema_privilege($1, 'USAGE, CREATE') AS ok`, [schema])).rows[0]!.ok
  if (create) return { ok: true, label, detail: `${user} may create and write the replica's tables` }
  // Without CREATE, every table (and the bookkeeping table) must be there already and writable.
  const missing: string[] = []
  for (const name of [...tables.map((t) => t.name), '_fsm_sync_state']) {
    const r = await client.query<{ ok: boolean | null }>(
      `SELECT CASE WHEN to_regclass($1) IS NULL THEN NULL ELSE has_table_privilege($1, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE') END AS ok`,
      [qualified(schema, name)],
    )
    if (r.rows[0]!.ok !== true) missing.push(name)
  }
  if (missing.length === 0) return { ok: true, label, detail: `${user} may write every table of the replica (it may not create new ones)` }
  return {
    ok: false,
    label,
    detail: `${user} lacks CREATE on schema ${schema} and cannot write ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}: run GRANT USAGE, CREATE ON SCHEMA "${schema}" TO "${user}"; as the schema's owner`,
  }
}
