// Whose replica this is and whether it can follow changes: the session's setup (the schema, under
// its lock), the state row read at start (another mirror's replica is refused or, under a higher
// lease epoch, replaced), the load decision (replica-state.ts), and the destination's position
// recorded in the mirror (change_log_consumers) so retention keeps what it has not read.
import { firstKeptSeq, lastChangeSeq } from '../store/repositories/change-log-consumers.js'
import { mirrorId } from '../store/repositories/mirror-identity.js'
import { takeoverProgress } from '../store/repositories/takeover-state.js'
import { POSTGRES_CONSUMER } from './consumer-name.js'
import { describeTarget, otherMirrorError, type DestinationError } from './postgres-errors.js'
import { ensureSchema } from './postgres-schema.js'
import { claimStateRow, readStateRow, replacement } from './postgres-state-row.js'
import type { ReplicaContext } from './replica-context.js'
import { loadReason } from './replica-state.js'

/** Opens the mirror's reader, borrows a session and sets the schema up (one process at a time). */
export async function connectReplica(ctx: ReplicaContext): Promise<void> {
  const { conn, position } = ctx
  await conn.openReader()
  position.mirrorId ??= mirrorId(ctx.options.mirror)
  const client = await conn.acquire()
  // One process at a time creates a schema's tables: two first runs at once would collide in the catalog.
  await conn.watch(() =>
    conn.schemaLock(async () => {
      position.schemaReload = (await ensureSchema(client, ctx.options.schema, ctx.tables, ctx.log)) ?? position.schemaReload
    }),
  )
}

export function otherMirror(ctx: ReplicaContext, theirs: string): DestinationError {
  return otherMirrorError(ctx.options.schema, describeTarget(ctx.options.url), theirs, ctx.position.mirrorId!)
}

/** Why the destination must be loaded from a snapshot, or null when it can follow changes. */
export async function replicaLoadReason(ctx: ReplicaContext): Promise<string | null> {
  const { options, position } = ctx
  const client = ctx.conn.client!
  const row = await readStateRow(client, options.schema, options.accountId)
  if (row === undefined) return 'a new destination'
  if (row.mirrorId !== null && row.mirrorId !== position.mirrorId)
    return replacement(ctx.epoch, row.mirrorEpoch) ?? Promise.reject(otherMirror(ctx, row.mirrorId))
  if (row.mirrorId === null) await claimStateRow(client, options.schema, options.accountId, position.mirrorId, ctx.fence, ctx.epoch)
  position.syncStateWritten = row.syncState === null ? undefined : takeoverProgress(row.syncState)
  position.loadedAt = row.loadedAt
  position.cursor = row.cursor
  position.written = row.written
  const sqlite = ctx.conn.reader!.sqlite
  const reason = loadReason({
    schemaReload: position.schemaReload,
    tablesChanged: row.tablesHash !== ctx.tablesHash,
    cursor: row.cursor,
    lastSeq: lastChangeSeq(sqlite),
    firstKept: firstKeptSeq(sqlite),
  })
  if (reason === null) syncConsumer(ctx, row.cursor)
  return reason
}

/** Records the destination's position in the mirror's change_log_consumers (best effort). */
export function syncConsumer(ctx: ReplicaContext, seq: number): void {
  const now = new Date(ctx.options.clock.now()).toISOString()
  try {
    ctx.consumers.destinationLoaded(ctx.consumerName, ctx.where, seq, ctx.position.loadedAt ?? now, now)
    // The one name older releases registered every destination under holds retention for nobody now.
    if (ctx.consumers.get(POSTGRES_CONSUMER)?.kind === 'destination') ctx.consumers.remove(POSTGRES_CONSUMER)
  } catch (err) {
    ctx.log.debug({ err }, 'cannot record the destination position in the mirror')
  }
}
