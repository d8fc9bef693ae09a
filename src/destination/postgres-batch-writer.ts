// Writes a batch's rows of one account into the replica, inside the caller's transaction: the tables
// compared by content, the views, then per logged table its deletes, upserts and child replacements,
// then change_log. Rows go as JSON through jsonb_populate_recordset, CHUNK at a time; every statement
// touches that account's rows only (account_id, first in every key).
import type pg from 'pg'
import type { Logger } from '../log/logger.js'
import type { Batch } from './batch-reader.js'
import type { Row, Table } from './batch-plan.js'
import type { SqlCell } from '../model/rows.js'
import { quoteIdentifier } from '../model/sql-names.js'
import { ACCOUNT_COLUMN, qualified, replicaKey, type ObjectType } from './postgres-ddl.js'
import { jsonValue, pgType, type OnNotInstant } from './postgres-types.js'
import type { WrittenState } from './replica-state.js'

const CHUNK = 500

const names = (t: Table) => [ACCOUNT_COLUMN, ...t.columns.map((c) => c.name)].map(quoteIdentifier).join(', ')

/** The row statements of one account in one replica schema on one connection. */
export class RowWriter {
  constructor(
    private readonly client: pg.Client,
    private readonly schema: string,
    private readonly accountId: string,
    private readonly onNotInstant: OnNotInstant,
  ) {}

  async insert(t: Table, rows: readonly Row[]): Promise<number> {
    const target = qualified(this.schema, t.spec.name)
    const cols = names(t)
    for (let i = 0; i < rows.length; i += CHUNK) {
      await this.client.query(`INSERT INTO ${target} (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${target}, $1::jsonb)`, [
        this.#records(t, rows.slice(i, i + CHUNK)),
      ])
    }
    return rows.length
  }

  /** Newer wins on updated_at where the table has one: a change applied twice changes nothing. */
  async upsert(t: Table, rows: readonly Row[], options: { insertOnly?: boolean } = {}): Promise<number> {
    if (rows.length === 0) return 0
    const target = qualified(this.schema, t.spec.name)
    const cols = names(t)
    const pk = replicaKey(t.spec)
    const others = t.columns.filter((c) => !pk.includes(c.name))
    const onConflict =
      others.length === 0 || options.insertOnly === true
        ? 'DO NOTHING'
        : `DO UPDATE SET ${others.map((c) => `${quoteIdentifier(c.name)} = excluded.${quoteIdentifier(c.name)}`).join(', ')}${
            t.hasUpdatedAt ? ` WHERE t.updated_at IS NULL OR excluded.updated_at IS NULL OR excluded.updated_at >= t.updated_at` : ''
          }`
    for (let i = 0; i < rows.length; i += CHUNK) {
      await this.client.query(
        `INSERT INTO ${target} AS t (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::${target}, $1::jsonb)
         ON CONFLICT (${pk.map(quoteIdentifier).join(', ')}) ${onConflict}`,
        [this.#records(t, rows.slice(i, i + CHUNK))],
      )
    }
    return rows.length
  }

  async deleteKeys(t: Table, columns: readonly string[], keys: readonly string[][]): Promise<void> {
    const target = qualified(this.schema, t.spec.name)
    const match = columns.map((c) => `t.${quoteIdentifier(c)} = k.${quoteIdentifier(c)}`).join(' AND ')
    const defs = columns.map((c) => `${quoteIdentifier(c)} ${pgType(t.columns.find((col) => col.name === c)?.kind ?? 'text')}`).join(', ')
    for (let i = 0; i < keys.length; i += CHUNK) {
      const objects = keys.slice(i, i + CHUNK).map((k) => Object.fromEntries(columns.map((c, j) => [c, k[j]])))
      // Keys come from change_log record ids (text); Postgres reads each as its column's type.
      await this.client.query(
        `DELETE FROM ${target} t USING jsonb_to_recordset($1::jsonb) AS k(${defs}) WHERE t.${quoteIdentifier(ACCOUNT_COLUMN)} = $2 AND ${match}`,
        [JSON.stringify(objects), this.accountId],
      )
    }
  }

  #records(t: Table, rows: readonly Row[]): string {
    const cols = t.columns
    return JSON.stringify(
      rows.map((r) => {
        const o: Record<string, unknown> = { [ACCOUNT_COLUMN]: this.accountId }
        for (let i = 0; i < cols.length; i++) o[cols[i]!.name] = jsonValue(cols[i]!.kind, r[i], this.onNotInstant)
        return o
      }),
    )
  }
}

export interface WriteBatchOptions {
  client: pg.Client
  schema: string
  accountId: string
  log: Logger
  onNotInstant: OnNotInstant
  changeLog: Table | undefined
  /** change_log rows at or below this seq are deleted from the replica (the mirror pruned them). */
  pruneThrough: number | undefined
  /** Builds the views (postgres-views.ts); whether every view was built. */
  rebuildViews: (types: readonly ObjectType[]) => Promise<boolean>
}

/**
 * Writes the batch's rows; `written` (the caller's copy) is brought to what is written. Returns
 * the rows written and whether the views, when the batch had some to build, were all built.
 */
export async function writeBatch(
  o: WriteBatchOptions,
  batch: Batch,
  written: WrittenState,
): Promise<{ rows: number; viewsBuilt: boolean }> {
  const { client, schema, accountId } = o
  const w = new RowWriter(client, schema, accountId, o.onNotInstant)
  const account = `${quoteIdentifier(ACCOUNT_COLUMN)} = $1`
  let rows = 0
  for (const [t, s] of batch.snapshots) {
    const target = qualified(schema, t.spec.name)
    written.fingerprints.set(t.spec.name, s.hash)
    if (s.appended?.incremental === true) {
      // What retention removed from the mirror (the oldest rows) goes; the rows since the watermark are upserted.
      const col = quoteIdentifier(s.appended.column)
      if (s.appended.min === null) await client.query(`DELETE FROM ${target} WHERE ${account}`, [accountId])
      else await client.query(`DELETE FROM ${target} WHERE ${account} AND ${col} < $2`, [accountId, s.appended.min])
      // Rows are never changed once appended: those at the watermark, already there, are left alone.
      rows += await w.upsert(t, s.rows, { insertOnly: true })
      const [n] = (await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${target} WHERE ${account}`, [accountId])).rows
      if (Number(n!.n) !== s.appended.count) {
        // Not the mirror's rows (a row changed or went otherwise): copied whole at the next check.
        o.log.warn({ table: t.spec.name }, `the replica of ${t.spec.name} differs from the mirror: copying it whole`)
        written.fingerprints.delete(t.spec.name)
        written.watermarks.delete(t.spec.name)
        continue
      }
    } else {
      await client.query(`DELETE FROM ${target} WHERE ${account}`, [accountId])
      rows += await w.insert(t, s.rows)
    }
    if (s.appended !== undefined) {
      if (s.appended.max === null) written.watermarks.delete(t.spec.name)
      else written.watermarks.set(t.spec.name, s.appended.max)
    }
  }
  const viewsBuilt = batch.views === undefined ? true : await o.rebuildViews(batch.views.types)
  for (const p of batch.tables) if (p.deletes.length > 0) await w.deleteKeys(p.table, p.table.spec.primaryKey, p.deletes)
  for (const p of batch.tables) rows += await w.upsert(p.table, p.upserts)
  for (const child of batch.tables.flatMap((p) => p.children)) {
    if (child.parentIds.length === 0) continue
    await w.deleteKeys(
      child.table,
      [child.table.spec.parent!.column],
      child.parentIds.map((id) => [id]),
    )
    rows += await w.insert(child.table, child.rows)
  }
  const changeLog = o.changeLog
  if (changeLog !== undefined) {
    const values = batch.changes.map((c) =>
      changeLog.columns.map((col) => (c as unknown as Record<string, SqlCell | undefined>)[col.name] ?? null),
    )
    rows += await w.upsert(changeLog, values)
    if (o.pruneThrough !== undefined) {
      await client.query(`DELETE FROM ${qualified(schema, 'change_log')} WHERE ${account} AND seq <= $2`, [accountId, o.pruneThrough])
    }
  }
  return { rows, viewsBuilt }
}
