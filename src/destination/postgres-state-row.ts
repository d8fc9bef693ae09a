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
  /** The lease epoch the mirror was recorded under (sharding), else null. */
  mirrorEpoch: number | null
  /** The mirror's sync state as last replicated (takeover-state.ts's JSON), else null. */
  syncState: string | null
  loadedAt: string
}

export async function readStateRow(client: pg.Client, schema: string, accountId: string): Promise<StateRow | undefined> {
  const { rows } = await client.query<{
    seq: string
    tables_hash: string
    views_hash: string | null
    fingerprints: string | null
    mirror_id: string | null
    mirror_epoch: string | null
    sync_state: string | null
    loaded_at: Date
  }>(
    `SELECT seq, tables_hash, views_hash, fingerprints, mirror_id, mirror_epoch, sync_state, loaded_at FROM ${qualified(schema, STATE_TABLE)} WHERE id = $1 AND account_id = $2`,
    [POSTGRES_CONSUMER, accountId],
  )
  const row = rows[0]
  if (row === undefined) return undefined
  return {
    cursor: Number(row.seq),
    tablesHash: row.tables_hash,
    written: parseWritten(row.fingerprints, row.views_hash),
    mirrorId: row.mirror_id,
    mirrorEpoch: row.mirror_epoch === null ? null : Number(row.mirror_epoch),
    syncState: row.sync_state,
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
  epoch?: number,
): Promise<void> {
  const claim = () =>
    client.query(
      `UPDATE ${qualified(schema, STATE_TABLE)} SET mirror_id = $2, mirror_epoch = $4 WHERE id = $1 AND account_id = $3 AND mirror_id IS NULL`,
      [POSTGRES_CONSUMER, mirrorId, accountId, epoch ?? null],
    )
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
): Promise<{ cursor: number; mirrorId: string | null; mirrorEpoch: number | null } | undefined> {
  const { rows } = await client.query<{ seq: string; mirror_id: string | null; mirror_epoch: string | null }>(
    `SELECT seq, mirror_id, mirror_epoch FROM ${qualified(schema, STATE_TABLE)} WHERE id = $1 AND account_id = $2 FOR UPDATE`,
    [POSTGRES_CONSUMER, accountId],
  )
  const r = rows[0]
  if (r === undefined) return undefined
  return { cursor: Number(r.seq), mirrorId: r.mirror_id, mirrorEpoch: r.mirror_epoch === null ? null : Number(r.mirror_epoch) }
}

/**
 * Under sharding, why a mirror presented under lease `epoch` replaces the one recorded under
 * `recorded` (a load): only a later owner's (a higher epoch) does. Undefined: it does not (without
 * sharding, no epoch, never).
 */
export function replacement(epoch: number | undefined, recorded: number | null): string | undefined {
  if (epoch === undefined || (recorded !== null && epoch <= recorded)) return undefined
  return `the account's new owner (lease epoch ${epoch}) replaces the replica of its earlier owner's mirror (epoch ${recorded ?? 'not recorded'})`
}

/** Moves the row with a batch: the cursor, what was written, and the views' hash when they were built again (null: failed). */
export async function moveStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
  o: {
    cursor: number
    updatedAt: string
    written: WrittenState
    viewsHash: string | null | undefined
    /** The mirror's sync state as of the rows written (undefined: kept as it was). */
    syncState?: string | undefined
    /** The lease epoch written under (sharding): recorded when higher than the row's. */
    epoch?: number | undefined
  },
): Promise<void> {
  const params: unknown[] = [POSTGRES_CONSUMER, o.cursor, o.updatedAt, fingerprintsJson(o.written), accountId]
  const set = (column: string, value: unknown, expr = (p: string) => p) => `, ${column} = ${expr(`$${params.push(value)}`)}`
  const extra =
    (o.viewsHash === undefined ? '' : set('views_hash', o.viewsHash)) +
    (o.syncState === undefined ? '' : set('sync_state', o.syncState)) +
    (o.epoch === undefined ? '' : set('mirror_epoch', o.epoch, (p) => `GREATEST(mirror_epoch, ${p}::bigint)`))
  await client.query(
    `UPDATE ${qualified(schema, STATE_TABLE)} SET seq = $2, updated_at = $3, fingerprints = $4${extra} WHERE id = $1 AND account_id = $5`,
    params,
  )
}

/** Writes the row whole after a load: the cursor is the snapshot's last change. */
export async function writeLoadedStateRow(
  client: pg.Client,
  schema: string,
  accountId: string,
  o: {
    seq: number
    tablesHash: string
    loadedAt: string
    viewsHash: string | null
    written: WrittenState
    mirrorId: string | undefined
    /** The lease epoch loaded under (sharding), else undefined. */
    epoch: number | undefined
    /** The mirror's sync state read in the load's snapshot. */
    syncState: string
  },
): Promise<void> {
  await client.query(
    `INSERT INTO ${qualified(schema, STATE_TABLE)} (account_id, id, seq, tables_hash, views_hash, fingerprints, loaded_seq, loaded_at, updated_at, mirror_id, mirror_epoch, sync_state)
       VALUES ($8, $1, $2, $3, $5, $6, $2, $4, $4, $7, $9, $10)
     ON CONFLICT (account_id, id) DO UPDATE SET seq = excluded.seq, tables_hash = excluded.tables_hash, views_hash = excluded.views_hash,
       fingerprints = excluded.fingerprints, loaded_seq = excluded.loaded_seq, loaded_at = excluded.loaded_at, updated_at = excluded.updated_at,
       mirror_id = excluded.mirror_id, mirror_epoch = excluded.mirror_epoch, sync_state = excluded.sync_state`,
    [
      POSTGRES_CONSUMER,
      o.seq,
      o.tablesHash,
      o.loadedAt,
      o.viewsHash,
      fingerprintsJson(o.written),
      o.mirrorId,
      accountId,
      o.epoch ?? null,
      o.syncState,
    ],
  )
}
