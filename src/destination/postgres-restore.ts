// The takeover of an account without re-reading it (docs/sharding.md, Takeover from the warehouse):
// the new owner rebuilds its mirror from the warehouse's copy of the account (rows, change_log with
// its seqs, the sync state replicated with them), unless its own mirror on disk is as new, then
// records its mirror as the one the replica follows, so the destination goes on from the copy's
// cursor without a load. Reads in one REPEATABLE READ transaction; the mirror's side is takeover-state.ts.
import type pg from 'pg'
import type { SqlCell } from '../model/rows.js'
import { quoteIdentifier } from '../model/sql-names.js'
import { canonicalTime } from '../model/timestamps.js'
import type { ColumnSpec, TableSpec } from '../model/table-spec.js'
import { mirrorId } from '../store/repositories/mirror-identity.js'
import { highWater, mirrorHasData, parseTakeoverState, restoreMirror } from '../store/repositories/takeover-state.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { POSTGRES_CONSUMER } from './consumer-name.js'
import type { Fence } from './destination-options.js'
import { ACCOUNT_COLUMN, qualified, STATE_TABLE } from './postgres-ddl.js'
import { readStateRow } from './postgres-state-row.js'
import { tablesHashOf } from './replica-state.js'

export interface RestoreOptions {
  /** A session of its own: the read is one transaction, the adoption another. */
  client: pg.Client
  schema: string
  accountId: string
  mirror: Sqlite
  /** The replicated tables (destinationTables()), change_log included. */
  tables: readonly TableSpec[]
  /** The lease's fencing check and epoch: the adoption commits only under them. */
  fence: Fence
  epoch: number
  now: () => string
}

export type RestoreOutcome =
  { source: 'warehouse'; rows: number; seq: number; adopted: boolean; reason: string } | { source: 'own-mirror' | 'none'; reason: string }

/** Restores the mirror from the warehouse when its copy is the better one; says which source the owner goes on from. */
export async function restoreFromWarehouse(o: RestoreOptions): Promise<RestoreOutcome> {
  const { client, schema, accountId, mirror } = o
  const local = mirrorHasData(mirror)
  const keep = (reason: string): RestoreOutcome => ({ source: local ? 'own-mirror' : 'none', reason })
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  let copy
  try {
    const exists = await client.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [qualified(schema, STATE_TABLE)])
    if (exists.rows[0]?.t == null) return keep('the warehouse holds no replica yet')
    const row = await readStateRow(client, schema, accountId)
    if (row === undefined) return keep('the warehouse holds no copy of the account')
    if (row.tablesHash !== tablesHashOf(o.tables)) return keep("the warehouse's copy has other tables (another release, or a load pending)")
    const state = parseTakeoverState(row.syncState)
    if (state === undefined) return keep("the warehouse's copy has no sync state (written by an older release)")
    if (row.mirrorId === mirrorId(mirror)) return keep("the warehouse's copy is of this mirror: the mirror is at least as new")
    const own = highWater(mirror)
    if (local && own !== null && (state.highWater === null || own > state.highWater)) {
      return keep(`this replica's own mirror is newer (it has seen ${own}, the warehouse's copy ${state.highWater ?? 'nothing'})`)
    }
    const tables = []
    for (const spec of o.tables) tables.push({ spec, rows: await readRows(client, schema, accountId, spec) })
    copy = { tables, state, row }
  } finally {
    await client.query('COMMIT').catch(() => undefined)
  }
  const { row } = copy
  const rows = restoreMirror(mirror, { tables: copy.tables, state: copy.state, lastSeq: row.cursor, now: o.now() })
  // The replica now follows this mirror, from the copy's cursor, unless it moved since the read. Not
  // adopted (moved, fenced, failed), the destination's rule for a later owner's mirror loads it instead.
  let adopted = false
  try {
    await client.query('BEGIN')
    await o.fence(client)
    const updated = await client.query(
      `UPDATE ${qualified(schema, STATE_TABLE)} SET mirror_id = $3, mirror_epoch = $4
        WHERE id = $1 AND account_id = $2 AND mirror_id IS NOT DISTINCT FROM $5 AND seq = $6`,
      [POSTGRES_CONSUMER, accountId, mirrorId(mirror), o.epoch, row.mirrorId, row.cursor],
    )
    adopted = updated.rowCount === 1
    await client.query('COMMIT')
  } catch {
    await client.query('ROLLBACK').catch(() => undefined)
  }
  return {
    source: 'warehouse',
    rows,
    seq: row.cursor,
    adopted,
    reason: `the warehouse's copy is newer (it has seen ${copy.state.highWater ?? 'nothing'})`,
  }
}

/** One account's rows of a table, each value as the mirror stores it (docs/postgres.md's mapping, backwards). */
async function readRows(client: pg.Client, schema: string, accountId: string, spec: TableSpec): Promise<SqlCell[][]> {
  const columns = spec.columns.map((c) => quoteIdentifier(c.name)).join(', ')
  const { rows } = await client.query<unknown[]>({
    text: `SELECT ${columns} FROM ${qualified(schema, spec.name)} WHERE ${quoteIdentifier(ACCOUNT_COLUMN)} = $1`,
    values: [accountId],
    rowMode: 'array',
  })
  return rows.map((r) => spec.columns.map((c, i) => toMirror(c, r[i])))
}

function toMirror(c: ColumnSpec, v: unknown): SqlCell {
  // A time the replica holds as NULL was '' (no value) or not an instant in the mirror: '' where the mirror needs one.
  if (v === null || v === undefined) return c.kind === 'time' && !c.nullable ? '' : null
  switch (c.kind) {
    case 'time':
      // As the sync writes it (canonicalTime); an instant outside years 0001-9999 as a NULL from the warehouse would be.
      try {
        return canonicalTime((v as Date).getTime()) ?? ''
      } catch {
        return c.nullable ? null : ''
      }
    case 'flag':
      return v === true ? 1 : 0
    case 'json':
      return JSON.stringify(v)
    case 'integer': {
      const n = Number(v)
      return Number.isSafeInteger(n) ? n : BigInt(v as string)
    }
    case 'real':
      return Number(v)
    case 'bytes':
      return v as Buffer
    default:
      return typeof v === 'string' ? v : JSON.stringify(v)
  }
}
