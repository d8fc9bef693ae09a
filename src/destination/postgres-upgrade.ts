// A replica from before accounts (its tables without account_id) upgraded in place, in one
// transaction under the schema's lock: every table gains account_id = 'default' and its primary key
// becomes (account_id, ...); rows, cursor and state are kept. docs/postgres.md, Upgrading.
import type pg from 'pg'
import { quoteIdentifier } from '../model/sql-names.js'
import type { TableSpec } from '../model/table-spec.js'
import { DestinationError } from './postgres-errors.js'
import { ACCOUNT_COLUMN, childIndexName, qualified, replicaKey, STATE_TABLE } from './postgres-ddl.js'

/** The account a replica from before accounts belongs to: the one account of a configuration without `accounts`. */
export const DEFAULT_ACCOUNT = 'default'

/** The tables of the schema that lack account_id (none: nothing to upgrade). */
async function tablesToUpgrade(client: pg.Client, schema: string, tables: readonly TableSpec[]): Promise<string[]> {
  const names = [...tables.map((t) => t.name), STATE_TABLE]
  const { rows } = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2) AND c.relkind IN ('r', 'p')
        AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = $3 AND NOT a.attisdropped)`,
    [schema, names, ACCOUNT_COLUMN],
  )
  return rows.map((r) => r.name).sort((a, b) => names.indexOf(a) - names.indexOf(b))
}

/**
 * Upgrades the schema's tables that lack account_id; a no-op once done (detected from the catalog).
 * Returns the tables upgraded and the rows they hold, or undefined when there was nothing to do.
 */
export async function upgradeToAccounts(
  client: pg.Client,
  schema: string,
  tables: readonly TableSpec[],
): Promise<{ tables: string[]; rows: number } | undefined> {
  if ((await tablesToUpgrade(client, schema, tables)).length === 0) return undefined
  await client.query('BEGIN')
  try {
    // Read again in the transaction: another process may have upgraded it meanwhile.
    const names = await tablesToUpgrade(client, schema, tables)
    let rows = 0
    for (const name of names) {
      const target = qualified(schema, name)
      const spec = tables.find((t) => t.name === name)
      const key = spec === undefined ? [ACCOUNT_COLUMN, 'id'] : replicaKey(spec)
      const pk = (
        await client.query<{ conname: string }>(`SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, [
          target,
        ])
      ).rows[0]?.conname
      // A constant default fills every row without rewriting the table; the new key's index is the long part.
      await client.query(`ALTER TABLE ${target} ADD COLUMN ${quoteIdentifier(ACCOUNT_COLUMN)} text NOT NULL DEFAULT '${DEFAULT_ACCOUNT}'`)
      const alter = [
        ...(pk === undefined ? [] : [`DROP CONSTRAINT ${quoteIdentifier(pk)}`]),
        ...(spec !== undefined && spec.primaryKey.length === 0 ? [] : [`ADD PRIMARY KEY (${key.map(quoteIdentifier).join(', ')})`]),
        `ALTER COLUMN ${quoteIdentifier(ACCOUNT_COLUMN)} DROP DEFAULT`,
      ]
      await client.query(`ALTER TABLE ${target} ${alter.join(', ')}`)
      const oldIndex = spec === undefined ? undefined : childIndexName(spec, true)
      if (oldIndex !== undefined) await client.query(`DROP INDEX IF EXISTS ${qualified(schema, oldIndex)}`)
      rows += Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${target}`)).rows[0]!.n)
    }
    await client.query('COMMIT')
    return { tables: names, rows }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    // A user's object on a replica table's key (a foreign key) stops it: said with the fix, nothing changed.
    if ((err as { code?: string }).code !== '2BP01') throw err
    throw new DestinationError(
      'shape',
      `cannot upgrade the replica in schema ${schema} to accounts (nothing was changed): ${(err as Error).message}; drop what depends on the replica's primary keys and start again`,
      { cause: err },
    )
  }
}
