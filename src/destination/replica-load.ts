// Loading one account's replica from a snapshot of its mirror (postgres-initial-load.ts does the
// COPY), one process at a time per account, and the account's views with their identity (the hash
// of the DDL they are built from), which the load and the batches both rebuild.
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { ObjectType } from './postgres-ddl.js'
import { loadSnapshot } from './postgres-initial-load.js'
import { buildAccountViews, viewDefinitions } from './postgres-views.js'
import type { ReplicaContext } from './replica-context.js'
import { replicaLoadReason, syncConsumer } from './replica-identity.js'

/** The views' identity: the DDL they are built from, so a change of the naming rule rebuilds them too. */
export function viewsHash(ctx: ReplicaContext, types: readonly ObjectType[]): string {
  const views = viewDefinitions(ctx.options.schema, ctx.options.tables, types)
  return createHash('sha256')
    .update(JSON.stringify(views.map((v) => [v.create, v.comment])))
    .digest('hex')
}

/**
 * Brings the views to `types` (buildViews): a view Postgres refuses is kept as it was, logged and
 * shown as the last error, and the data goes on. Returns whether every view was built.
 */
export async function rebuildViews(ctx: ReplicaContext, client: pg.Client, types: readonly ObjectType[]): Promise<boolean> {
  const { schema, accountId, tables } = ctx.options
  return ctx.health.viewsBuilt(await buildAccountViews(client, schema, accountId, tables, types))
}

/**
 * Loads every table from one read snapshot of the mirror with COPY, in one transaction. Returns
 * the rows loaded, or undefined when another process loaded it meanwhile. SQLite encodes the rows;
 * text holding NUL (which SQLite's string functions cannot see) fails the COPY, and the load is
 * then done again with the JavaScript encoder, which drops it.
 */
export async function loadReplica(ctx: ReplicaContext, reason: string, forced = false): Promise<number | undefined> {
  const { conn } = ctx
  // One process at a time loads an account: one that waited for another's load checks again whether it must.
  await conn.acquire()
  return conn.watch(() =>
    conn.accountLock(async () => {
      const why = forced ? reason : await replicaLoadReason(ctx)
      if (why === null) return undefined
      try {
        return await loadOnce(ctx, why, false)
      } catch (err) {
        const code = (err as { code?: string }).code
        if (code !== '22021' && code !== '22P05') throw err
        ctx.log.warn({ code }, 'a text value holds NUL, which Postgres refuses: loading again with every value encoded in JavaScript')
        return loadOnce(ctx, why, true)
      }
    }),
  )
}

async function loadOnce(ctx: ReplicaContext, reason: string, encodeInJs: boolean): Promise<number> {
  const { options, position, health } = ctx
  health.state = 'loading'
  const started = options.clock.now()
  ctx.log.info({ reason }, `loading the Postgres destination from a snapshot of the mirror: ${reason}`)
  const client = ctx.conn.client!
  const loaded = await loadSnapshot({
    client,
    sqlite: ctx.conn.reader!.sqlite,
    schema: options.schema,
    accountId: options.accountId,
    tables: ctx.tables,
    encodeInJs,
    onNotInstant: ctx.onNotInstant,
    tablesHash: ctx.tablesHash,
    mirrorId: position.mirrorId,
    viewsHash: (types) => viewsHash(ctx, types),
    rebuildViews: (types) => rebuildViews(ctx, client, types),
    now: () => new Date(options.clock.now()).toISOString(),
    fence: ctx.fence,
    epoch: ctx.epoch,
  })
  const { rows, seq } = loaded
  position.loadedAt = loaded.loadedAt
  position.schemaReload = null
  position.written = loaded.written
  position.cursor = seq
  position.prunedThrough = loaded.prunedThrough
  health.counts.loads++
  health.counts.rowsReplicated += rows
  syncConsumer(ctx, seq)
  ctx.log.info({ rows, seq, durationMs: Math.round(options.clock.now() - started) }, 'the Postgres destination is loaded')
  return rows
}
