// An account's state row in the replica (_fsm_sync_state, keyed by account_id and id POSTGRES_CONSUMER):
// read at a start, locked and moved with each batch, written whole by a load. What its columns mean: replica-state.ts.
import type pg from 'pg'
import { qualified, STATE_TABLE } from './postgres-ddl.js'
import { fingerprintsJson, parseWritten, type WrittenState } from './replica-state.js'
import { POSTGRES_CONSUMER } from './consumer-name.js'
import type { Fence } from './destination-options.js'

export interface StateRow {
  cursor: number
  tablesHash: string
  written: WrittenState
  mirrorId: string | null
  loadedAt: string
}

export async function readStateRow(client: pg.Client, schema: string, accountId: string): Promise<StateRow | undefined> {
  const { rows } = await client.query<{
    seq: string
    tables_hash: string
    views_hash: string | null
    fingerprints: string | null
    mirror_id: string | null
    loaded_at: Date
  }>(
    `SELECT seq, tables_hash, views_hash, fingerprints, mirror_id, loaded_at FROM ${qualified(schema, STATE_TABLE)} WHERE id = $1 AND account_id = $2`,
    [POSTGRES_CONSUMER, accountId],
  )
  const row = rows[0]
  if (row === undefined) return undefined
  return {
    cursor: Number(row.seq),
    tablesHash: row.tables_hash,
    written: parseWritten(row.fingerprints, row.views_hash),
    mirrorId: row.mirror_id,
    loadedAt: row.loaded_at.toISOString(),
  }
}

/**
 * A replica from before the mirror's identity was recorded: the first mirror that feeds it is its
 * own. With a fence, in a transaction the fence opens (destination-options.ts).
 */
export async function claimStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
  mirrorId: string | undefined,
  fence?: Fence,
): Promise<void> {
  const claim = () =>
    client.query(`UPDATE ${qualified(schema, STATE_TABLE)} SET mirror_id = $2 WHERE id = $1 AND account_id = $3 AND mirror_id IS NULL`, [
      POSTGRES_CONSUMER,
      mirrorId,
      accountId,
    ])
  if (fence === undefined) {
    await claim()
    return
  }
  await client.query('BEGIN')
  try {
    await fence(client)
    await claim()
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  }
}

/** Locks the row for the batch's transaction; its cursor and mirror, or undefined when it is gone. */
export async function lockStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
): Promise<{ cursor: number; mirrorId: string | null } | undefined> {
  const { rows } = await client.query<{ seq: string; mirror_id: string | null }>(
    `SELECT seq, mirror_id FROM ${qualified(schema, STATE_TABLE)} WHERE id = $1 AND account_id = $2 FOR UPDATE`,
    [POSTGRES_CONSUMER, accountId],
  )
  return rows[0] === undefined ? undefined : { cursor: Number(rows[0].seq), mirrorId: rows[0].mirror_id }
}

/** Moves the row with a batch: the cursor, what was written, and the views' hash when they were built again (null: failed). */
export async function moveStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
  o: { cursor: number; updatedAt: string; written: WrittenState; viewsHash: string | null | undefined },
): Promise<void> {
  const { viewsHash } = o
  await client.query(
    `UPDATE ${qualified(schema, STATE_TABLE)} SET seq = $2, updated_at = $3, fingerprints = $4${viewsHash === undefined ? '' : ', views_hash = $6'} WHERE id = $1 AND account_id = $5`,
    [POSTGRES_CONSUMER, o.cursor, o.updatedAt, fingerprintsJson(o.written), accountId, ...(viewsHash === undefined ? [] : [viewsHash])],
  )
}

/** Writes the row whole after a load: the cursor is the snapshot's last change. */
export async function writeLoadedStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
  o: { seq: number; tablesHash: string; loadedAt: string; viewsHash: string | null; written: WrittenState; mirrorId: string | undefined },
): Promise<void> {
  await client.query(
    `INSERT INTO ${qualified(schema, STATE_TABLE)} (account_id, id, seq, tables_hash, views_hash, fingerprints, loaded_seq, loaded_at, updated_at, mirror_id)
       VALUES ($8, $1, $2, $3, $5, $6, $2, $4, $4, $7)
     ON CONFLICT (account_id, id) DO UPDATE SET seq = excluded.seq, tables_hash = excluded.tables_hash, views_hash = excluded.views_hash,
       fingerprints = excluded.fingerprints, loaded_seq = excluded.loaded_seq, loaded_at = excluded.loaded_at, updated_at = excluded.updated_at,
       mirror_id = excluded.mirror_id`,
    [POSTGRES_CONSUMER, o.seq, o.tablesHash, o.loadedAt, o.viewsHash, fingerprintsJson(o.written), o.mirrorId, accountId],
  )
}
