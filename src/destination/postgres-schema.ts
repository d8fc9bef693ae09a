// The replica's schema in Postgres, set up at each connection: the database's encoding checked, the
// schema, tables, columns and indexes created where missing, a table of another shape refused.
import type pg from 'pg'
import { quoteIdentifier } from '../model/sql-names.js'
import type { Table } from './batch-plan.js'
import {
  createObjectTypesTableSql,
  createStateTableSql,
  createTableSql,
  DATABASE_ENCODING_QUERY,
  indexSql,
  missingColumnsSql,
  OBJECT_TYPES_TABLE,
  qualified,
  recreatedReason,
  shapeProblems,
  STATE_TABLE,
  type ExistingColumn,
} from './postgres-ddl.js'
import { DestinationError, encodingProblem } from './postgres-errors.js'
import { DEFAULT_ACCOUNT, upgradeToAccounts } from './postgres-upgrade.js'
import type { Logger } from '../log/logger.js'

/**
 * Creates what is missing (schema, tables, columns); refuses a table of another shape. Returns why
 * the replica must be loaded again when it created a table or column (empty where rows should be), or null.
 */
export async function ensureSchema(client: pg.Client, schema: string, tables: readonly Table[], log?: Logger): Promise<string | null> {
  // Text is sent as UTF8; a database that cannot hold all of it is refused here, not at the first emoji.
  await client.query(`SET client_encoding = 'UTF8'`)
  const { encoding } = (await client.query<{ encoding: string }>(DATABASE_ENCODING_QUERY)).rows[0]!
  const badEncoding = encodingProblem(encoding, String(client.database))
  if (badEncoding !== undefined) throw new DestinationError('database', badEncoding)
  const exists = await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [schema])
  if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`)
  const started = performance.now()
  const upgraded = await upgradeToAccounts(
    client,
    schema,
    tables.map((t) => t.spec),
  )
  if (upgraded !== undefined) {
    const { tables: names, rows } = upgraded
    log?.info(
      { tables: names, rows, durationMs: Math.round(performance.now() - started) },
      `upgraded the replica from before accounts in place: the ${rows} rows of ${names.length} tables are account ${DEFAULT_ACCOUNT}'s`,
    )
  }
  const columns = (
    await client.query<ExistingColumn>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = $1`,
      [schema],
    )
  ).rows
  const keys = new Map<string, string[]>()
  for (const r of (
    await client.query<{ table_name: string; column_name: string }>(
      `SELECT c.relname AS table_name, a.attname AS column_name
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
        WHERE n.nspname = $1 AND i.indisprimary ORDER BY c.relname, k.ord`,
      [schema],
    )
  ).rows) {
    keys.set(r.table_name, [...(keys.get(r.table_name) ?? []), r.column_name])
  }
  const problems = tables.flatMap((t) =>
    shapeProblems(schema, t.spec, columns, columns.some((c) => c.table_name === t.spec.name) ? (keys.get(t.spec.name) ?? []) : undefined),
  )
  if (problems.length > 0) throw new DestinationError('shape', problems.join('; '))
  const ddl = [
    createStateTableSql(schema),
    createObjectTypesTableSql(schema),
    `ALTER TABLE ${qualified(schema, STATE_TABLE)} ADD COLUMN IF NOT EXISTS fingerprints text`,
    // The mirror the replica of each account belongs to, since it is recorded.
    `ALTER TABLE ${qualified(schema, STATE_TABLE)} ADD COLUMN IF NOT EXISTS mirror_id text`,
    // Sharding: the lease epoch that mirror was recorded under, and the mirror's sync state (postgres-restore.ts).
    `ALTER TABLE ${qualified(schema, STATE_TABLE)} ADD COLUMN IF NOT EXISTS mirror_epoch bigint`,
    `ALTER TABLE ${qualified(schema, STATE_TABLE)} ADD COLUMN IF NOT EXISTS sync_state text`,
    ...tables.flatMap((t) => [createTableSql(schema, t.spec), ...missingColumnsSql(schema, t.spec, columns), ...indexSql(schema, t.spec)]),
  ]
  const haveAll =
    columns.some((c) => c.table_name === STATE_TABLE && c.column_name === 'fingerprints') &&
    ['mirror_id', 'mirror_epoch', 'sync_state'].every((n) => columns.some((c) => c.table_name === STATE_TABLE && c.column_name === n)) &&
    columns.some((c) => c.table_name === OBJECT_TYPES_TABLE) &&
    tables.every((t) => t.columns.every((c) => columns.some((e) => e.table_name === t.spec.name && e.column_name === c.name)))
  if (haveAll && upgraded === undefined) return null
  const reload = recreatedReason(
    tables.map((t) => t.spec),
    columns,
  )
  await client.query('BEGIN')
  try {
    for (const s of ddl) await client.query(s)
    // Recorded with the DDL too, so that a process that stops before the load still loads at its next start.
    if (reload !== null) await client.query(`UPDATE ${qualified(schema, STATE_TABLE)} SET tables_hash = ''`)
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  }
  return reload
}
