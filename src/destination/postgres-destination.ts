// The replicator of one account: follows its mirror's change_log into the Postgres schema all accounts
// share (docs/architecture.md, The Postgres destination; docs/postgres.md), on sessions the process's
// pool lends (destination-pool.ts), sequencing the units: schema setup (postgres-schema.ts), the load
// decision (replica-state.ts) and the initial load (postgres-initial-load.ts), then batch after batch
// the reader (batch-reader.ts, planned in batch-plan.ts) and the writer (postgres-batch-writer.ts),
// committed with the cursor (postgres-batch-commit.ts). Killed at any moment, the next start goes on
// from the cursor; a failing server is retried with back-off while sweeps and webhooks go on.
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import type { Logger } from '../log/logger.js'
import { ChangeLogConsumers, firstKeptSeq, lastChangeSeq, type DestinationTarget } from '../store/repositories/change-log-consumers.js'
import { mirrorId } from '../store/repositories/mirror-identity.js'
import { takeoverProgress } from '../store/repositories/takeover-state.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import type { ObjectType } from './postgres-ddl.js'
import { DestinationError, describeTarget, explainDestinationError, otherMirrorError } from './postgres-errors.js'
import { buildAccountViews, viewDefinitions, type ViewDefinition } from './postgres-views.js'
import { DestinationPool } from './destination-pool.js'
import { DEFAULT_ACCOUNT } from './postgres-upgrade.js'
import { planTables, type Table } from './batch-plan.js'
import { readBatch, type Batch } from './batch-reader.js'
import { commitBatch } from './postgres-batch-commit.js'
import { loadSnapshot } from './postgres-initial-load.js'
import { ensureSchema } from './postgres-schema.js'
import { claimStateRow, readStateRow, replacement } from './postgres-state-row.js'
import { destinationConsumerName, POSTGRES_CONSUMER } from './consumer-name.js'
import { leaseLost, type CatchUpSummary, type DestinationStatus, type PostgresDestinationOptions } from './destination-options.js'
import { DestinationHealth } from './destination-health.js'
import { ReplicaConnections } from './replica-connections.js'
import { copyWritten, emptyWritten, loadReason, tablesHashOf, type BatchOutcome, type WrittenState } from './replica-state.js'

export { destinationConsumerName, POSTGRES_CONSUMER }
export type { CatchUpSummary, DestinationStatus, PostgresDestinationOptions } from './destination-options.js'

const PRUNED_REASON = 'the mirror pruned changes it had not read'
/** Batches catchUp's last pass may take before it gives up on a mirror that never stops changing. */
const FINAL_PASSES = 1000

function hash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex')
}

export class PostgresDestination {
  readonly #options: Required<Omit<PostgresDestinationOptions, 'pool' | 'fence' | 'epoch'>>
  readonly #fence: PostgresDestinationOptions['fence']
  readonly #epoch: number | undefined
  /** The progress of the takeover state the state row holds (takeoverProgress), as last read or written. */
  #syncStateWritten: string | undefined
  readonly #pool: DestinationPool
  /** A pool of its own (none given): ended with the destination. */
  readonly #ownPool: boolean
  readonly #log: Logger
  readonly #tables: Table[]
  readonly #byName: Map<string, Table>
  readonly #tablesHash: string
  readonly #consumers: ChangeLogConsumers
  readonly #consumerName: string
  readonly #conn: ReplicaConnections
  /** When the replica was last loaded from a snapshot (its state row's loaded_at). */
  #loadedAt: string | undefined
  #mirrorId: string | undefined
  #cursor: number | null = null
  /** What the state row says was last written besides the cursor (replica-state.ts). */
  #written: WrittenState = emptyWritten()
  #lastSnapshotCheck = -Infinity
  #forceSnapshotCheck = true
  readonly #health: DestinationHealth
  readonly #onNotInstant = (): void => {
    this.#health.counts.timesNulled++
  }
  #stop = new AbortController()
  #loop: Promise<void> | undefined
  #prunedThrough = 0
  /** Why the replica must be loaded: #ensureSchema created a table or column of it. Cleared by a load. */
  #schemaReload: string | null = null

  constructor(options: PostgresDestinationOptions) {
    this.#options = {
      batchSize: 1000,
      pollMs: 200,
      snapshotCheckMs: 5_000,
      retry: { minMs: 500, maxMs: 30_000 },
      limits: { lockTimeoutMs: 30_000, statementTimeoutMs: 900_000 },
      waitReportMs: 10_000,
      ...options,
      accountId: options.accountId ?? DEFAULT_ACCOUNT,
    }
    this.#fence = options.fence
    this.#epoch = options.epoch
    const o = this.#options
    this.#ownPool = options.pool === undefined
    this.#pool = options.pool ?? new DestinationPool({ url: o.url, limits: o.limits, clock: o.clock, maxConnections: 1 })
    this.#log = options.logger.child({ component: 'destination', destination: 'postgres', schema: options.schema, account: o.accountId })
    this.#tables = planTables(options.tables)
    this.#byName = new Map(this.#tables.map((t) => [t.spec.name, t]))
    this.#tablesHash = tablesHashOf(options.tables)
    this.#consumers = new ChangeLogConsumers(options.mirror)
    this.#consumerName = destinationConsumerName(options.url, options.schema)
    this.#health = new DestinationHealth(this.#log, options.clock, this.#consumers, this.#consumerName, this.#where)
    this.#conn = new ReplicaConnections({ ...o, pool: this.#pool }, this.#log, this.#health, this.#onNotInstant)
  }

  /** Its name in change_log_consumers. */
  get consumerName(): string {
    return this.#consumerName
  }

  get schema(): string {
    return this.#options.schema
  }

  get accountId(): string {
    return this.#options.accountId
  }

  /** Starts following the mirror in the background until stop(). Failures are retried with back-off. */
  start(): void {
    if (this.#loop !== undefined) return
    this.#log.info(
      { target: describeTarget(this.#options.url) },
      `replicating the mirror to Postgres at ${describeTarget(this.#options.url)}, schema ${this.#options.schema}`,
    )
    this.#loop = this.#follow(this.#stop.signal)
  }

  /** Stops following: the batch in flight commits or rolls back, within about two seconds. */
  async stop(): Promise<void> {
    this.#stop.abort()
    if (this.#loop !== undefined) {
      const settled = await Promise.race([this.#loop.then(() => true), sleep(2_000).then(() => false)])
      // A server that does not answer: ending the connection fails the query in flight (its transaction rolls back).
      if (!settled) await this.#conn.dropSession()
      await this.#loop
    }
    await this.close()
    this.#health.state = 'stopped'
  }

  async close(): Promise<void> {
    await this.#conn.close()
    if (this.#ownPool) await this.#pool.end()
  }

  status(): DestinationStatus {
    return this.#health.status(this.#options.mirror, this.#cursor)
  }

  /**
   * Brings the destination up to the mirror's newest change as of the call, loading it first when
   * it needs a load, and returns what it did. Throws a DestinationError on failure.
   */
  async catchUp(options: { reseed?: boolean } = {}): Promise<CatchUpSummary> {
    const started = this.#options.clock.now()
    const before = { ...this.#health.counts }
    try {
      await this.#connect()
      const reseed = options.reseed === true
      const loadReason = reseed ? 'asked for (--reseed)' : await this.#conn.watch(() => this.#loadReason())
      let loaded = loadReason
      let loadedRows = 0
      if (loadReason !== null) {
        const n = await this.#load(loadReason, reseed)
        // Another process loaded it meanwhile (it held the schema's lock): nothing to load any more.
        if (n === undefined) loaded = null
        else loadedRows = n
      }
      const target = lastChangeSeq(this.#conn.reader!.sqlite)
      for (;;) {
        const outcome = await this.#applyBatch()
        if (outcome.kind === 'needs-load') {
          loaded = outcome.reason
          loadedRows += (await this.#load(outcome.reason)) ?? 0
          continue
        }
        if (outcome.kind === 'idle' || (this.#cursor ?? 0) >= target) break
      }
      // A last pass compares the tables without change_log entries, now that the changes are in, and
      // goes on until a pass applies nothing (changes that came meanwhile, a load the pruning asks for).
      this.#forceSnapshotCheck = true
      for (let pass = 0; ; pass++) {
        if (pass >= FINAL_PASSES) {
          throw new DestinationError(
            'transient',
            `the mirror kept changing: still not caught up after ${FINAL_PASSES} batches; run replicate again`,
          )
        }
        const outcome = await this.#applyBatch()
        if (outcome.kind === 'needs-load') {
          loaded = outcome.reason
          loadedRows += (await this.#load(outcome.reason)) ?? 0
          continue
        }
        if (outcome.kind === 'idle') break
      }
      this.#health.state = 'following'
      this.#health.lastError = undefined
      await this.#conn.release()
      return {
        loaded,
        loadedRows,
        changesApplied: this.#health.counts.changesApplied - before.changesApplied,
        rowsWritten: this.#health.counts.rowsReplicated - before.rowsReplicated,
        cursor: this.#cursor ?? 0,
        durationMs: Math.round(this.#options.clock.now() - started),
      }
    } catch (err) {
      const e = this.#explain(err)
      // The caller shows the error (replicate prints it): logged here only at debug, and a destination
      // never loaded is not registered for it.
      this.#health.recordError(e, { oneShot: true })
      await this.#conn.dropSession()
      throw e
    }
  }

  async #follow(signal: AbortSignal): Promise<void> {
    let delay = this.#options.retry.minMs
    let needsPrepare = true
    while (!signal.aborted) {
      try {
        if (needsPrepare) {
          await this.#connect()
          const reason = await this.#conn.watch(() => this.#loadReason())
          if (reason !== null) await this.#load(reason)
          needsPrepare = false
        }
        const outcome = await this.#applyBatch()
        // The session goes back to the pool after each batch: the other accounts take their turns.
        await this.#conn.release()
        if (outcome.kind === 'needs-load') {
          await this.#load(outcome.reason)
          continue
        }
        this.#health.state = 'following'
        if (this.#health.lastError !== undefined) {
          this.#log.info('the destination is replicating again')
          this.#health.lastError = undefined
          this.#syncConsumer(this.#cursor ?? 0)
        }
        delay = this.#options.retry.minMs
        if (outcome.kind === 'idle') await this.#options.clock.sleep(this.#options.pollMs, signal).catch(() => undefined)
      } catch (err) {
        if (signal.aborted) break
        if (leaseLost(err)) {
          // Another replica owns the account now: its transaction rolled back; nothing more is written from here.
          this.#log.warn(
            { reason: err instanceof Error ? err.message : String(err) },
            'the destination stops: this replica no longer owns the account (fenced), its last batch was rolled back',
          )
          await this.#conn.dropSession()
          this.#health.state = 'stopped'
          break
        }
        const e = this.#explain(err)
        this.#health.recordError(e, { oneShot: false })
        needsPrepare = true
        await this.#conn.dropSession()
        // A problem the user must fix is retried slowly: it is logged once, not once per attempt.
        const wait = e.kind === 'transient' || e.kind === 'connect' ? delay : this.#options.retry.maxMs
        await this.#options.clock.sleep(wait, signal).catch(() => undefined)
        delay = Math.min(delay * 2, this.#options.retry.maxMs)
      }
    }
  }

  /** The error in words, with the wait reported before a statement gave up waiting (who held the lock). */
  #explain(err: unknown): DestinationError {
    const e = explainDestinationError(err, this.#options.url, this.#options.schema)
    const wait = this.#health.takeLastWait()
    if (wait === undefined || e.kind !== 'transient') return e
    return new DestinationError(e.kind, `${e.message} (before that: ${wait})`, { cause: err })
  }

  get #where(): DestinationTarget {
    return { target: describeTarget(this.#options.url), schema: this.#options.schema }
  }

  async #connect(): Promise<void> {
    await this.#conn.openReader()
    this.#mirrorId ??= mirrorId(this.#options.mirror)
    const client = await this.#conn.acquire()
    // One process at a time creates a schema's tables: two first runs at once would collide in the catalog.
    await this.#conn.watch(() =>
      this.#conn.schemaLock(async () => {
        this.#schemaReload = (await ensureSchema(client, this.#options.schema, this.#tables, this.#log)) ?? this.#schemaReload
      }),
    )
  }

  #otherMirror(theirs: string): DestinationError {
    return otherMirrorError(this.#options.schema, describeTarget(this.#options.url), theirs, this.#mirrorId!)
  }

  /** Why the destination must be loaded from a snapshot, or null when it can follow changes. */
  async #loadReason(): Promise<string | null> {
    const client = this.#conn.client!
    const row = await readStateRow(client, this.#options.schema, this.#options.accountId)
    if (row === undefined) return 'a new destination'
    if (row.mirrorId !== null && row.mirrorId !== this.#mirrorId)
      return replacement(this.#epoch, row.mirrorEpoch) ?? Promise.reject(this.#otherMirror(row.mirrorId))
    if (row.mirrorId === null)
      await claimStateRow(client, this.#options.schema, this.#options.accountId, this.#mirrorId, this.#fence, this.#epoch)
    this.#syncStateWritten = row.syncState === null ? undefined : takeoverProgress(row.syncState)
    this.#loadedAt = row.loadedAt
    this.#cursor = row.cursor
    this.#written = row.written
    const sqlite = this.#conn.reader!.sqlite
    const reason = loadReason({
      schemaReload: this.#schemaReload,
      tablesChanged: row.tablesHash !== this.#tablesHash,
      cursor: row.cursor,
      lastSeq: lastChangeSeq(sqlite),
      firstKept: firstKeptSeq(sqlite),
    })
    if (reason === null) this.#syncConsumer(row.cursor)
    return reason
  }

  #syncConsumer(seq: number): void {
    const now = new Date(this.#options.clock.now()).toISOString()
    try {
      this.#consumers.destinationLoaded(this.#consumerName, this.#where, seq, this.#loadedAt ?? now, now)
      // The one name older releases registered every destination under holds retention for nobody now.
      if (this.#consumers.get(POSTGRES_CONSUMER)?.kind === 'destination') this.#consumers.remove(POSTGRES_CONSUMER)
    } catch (err) {
      this.#log.debug({ err }, 'cannot record the destination position in the mirror')
    }
  }

  /**
   * Loads every table from one read snapshot of the mirror with COPY, in one transaction. Returns
   * the rows loaded. SQLite encodes the rows; text holding NUL (which SQLite's string functions cannot
   * see) fails the COPY, and the load is then done again with the JavaScript encoder, which drops it.
   */
  async #load(reason: string, forced = false): Promise<number | undefined> {
    // One process at a time loads an account: one that waited for another's load checks again whether it must.
    await this.#conn.acquire()
    return this.#conn.watch(() =>
      this.#conn.accountLock(async () => {
        const why = forced ? reason : await this.#loadReason()
        if (why === null) return undefined
        try {
          return await this.#loadOnce(why, false)
        } catch (err) {
          const code = (err as { code?: string }).code
          if (code !== '22021' && code !== '22P05') throw err
          this.#log.warn({ code }, 'a text value holds NUL, which Postgres refuses: loading again with every value encoded in JavaScript')
          return this.#loadOnce(why, true)
        }
      }),
    )
  }

  async #loadOnce(reason: string, encodeInJs: boolean): Promise<number> {
    this.#health.state = 'loading'
    const started = this.#options.clock.now()
    this.#log.info({ reason }, `loading the Postgres destination from a snapshot of the mirror: ${reason}`)
    const client = this.#conn.client!
    const loaded = await loadSnapshot({
      client,
      sqlite: this.#conn.reader!.sqlite,
      schema: this.#options.schema,
      accountId: this.#options.accountId,
      tables: this.#tables,
      encodeInJs,
      onNotInstant: this.#onNotInstant,
      tablesHash: this.#tablesHash,
      mirrorId: this.#mirrorId,
      viewsHash: (types) => this.#viewsHash(types),
      rebuildViews: (types) => this.#rebuildViews(client, types),
      now: () => new Date(this.#options.clock.now()).toISOString(),
      fence: this.#fence,
      epoch: this.#epoch,
    })
    const { rows, seq } = loaded
    this.#loadedAt = loaded.loadedAt
    this.#schemaReload = null
    this.#written = loaded.written
    this.#cursor = seq
    this.#prunedThrough = loaded.prunedThrough
    this.#health.counts.loads++
    this.#health.counts.rowsReplicated += rows
    this.#syncConsumer(seq)
    this.#log.info({ rows, seq, durationMs: Math.round(this.#options.clock.now() - started) }, 'the Postgres destination is loaded')
    return rows
  }

  /** The views' identity: the DDL they are built from, so a change of the naming rule rebuilds them too. */
  #viewsHash(types: readonly ObjectType[]): string {
    return hash(this.#views(types).map((v) => [v.create, v.comment]))
  }

  /** The views of this account's custom objects, and the fixed views (postgres-views.ts): what its views hash is of. */
  #views(types: readonly ObjectType[]): ViewDefinition[] {
    return viewDefinitions(this.#options.schema, this.#options.tables, types)
  }

  /**
   * Brings the views to `types` (buildViews): a view Postgres refuses is kept as it was, logged and
   * shown as the last error, and the data goes on. Returns whether every view was built.
   */
  async #rebuildViews(client: pg.Client, types: readonly ObjectType[]): Promise<boolean> {
    const { schema, accountId, tables } = this.#options
    return this.#health.viewsBuilt(await buildAccountViews(client, schema, accountId, tables, types))
  }

  /** Reads the next batch (batch-reader.ts); every table compared by content when a check is due. */
  #readBatch(sqlite: Sqlite, cursor: number): Batch {
    const now = this.#options.clock.now()
    const checkAll = this.#forceSnapshotCheck || now - this.#lastSnapshotCheck >= this.#options.snapshotCheckMs
    if (checkAll) {
      this.#lastSnapshotCheck = now
      this.#forceSnapshotCheck = false
    }
    return readBatch(sqlite, cursor, {
      tables: this.#tables,
      byName: this.#byName,
      batchSize: this.#options.batchSize,
      written: this.#written,
      checkAll,
      viewsHash: (types) => this.#viewsHash(types),
    })
  }

  /**
   * Applies the next batch of changes in one Postgres transaction with the cursor, and says what it did.
   */
  async #applyBatch(): Promise<BatchOutcome> {
    const sqlite = this.#conn.reader!.sqlite
    const cursor = this.#cursor ?? 0
    const batch = this.#readBatch(sqlite, cursor)
    const pruned = batch.firstKept === undefined ? 0 : batch.firstKept - 1
    if (batch.gone) return { kind: 'needs-load', reason: PRUNED_REASON }
    const progress = batch.syncState === undefined ? this.#syncStateWritten : takeoverProgress(batch.syncState)
    const moved = progress !== this.#syncStateWritten || pruned > this.#prunedThrough
    if (batch.changes.length === 0 && batch.snapshots.size === 0 && batch.views === undefined && !moved) {
      return { kind: 'idle' }
    }
    // A session only for a batch that writes: an idle account holds no connection.
    const client = await this.#conn.acquire()
    return this.#conn.watch(() => this.#writeBatch(client, batch, cursor, pruned))
  }

  async #writeBatch(client: pg.Client, batch: Batch, cursor: number, pruned: number): Promise<BatchOutcome> {
    const to = batch.changes.length === 0 ? cursor : batch.changes[batch.changes.length - 1]!.seq
    const written = copyWritten(this.#written)
    const committed = await commitBatch(
      {
        client,
        schema: this.#options.schema,
        accountId: this.#options.accountId,
        log: this.#log,
        onNotInstant: this.#onNotInstant,
        changeLog: this.#byName.get('change_log'),
        pruneThrough: pruned > this.#prunedThrough ? pruned : undefined,
        rebuildViews: (types) => this.#rebuildViews(client, types),
        from: cursor,
        to,
        mirrorId: this.#mirrorId,
        otherMirror: (theirs) => this.#otherMirror(theirs),
        now: new Date(this.#options.clock.now()).toISOString(),
        fence: this.#fence,
        epoch: this.#epoch,
      },
      batch,
      written,
    )
    if (committed.kind === 'cursor-moved') {
      this.#cursor = committed.cursor
      return { kind: 'cursor-moved' }
    }
    if (committed.kind === 'replaced') return { kind: 'needs-load', reason: committed.reason }
    if (batch.syncState !== undefined) this.#syncStateWritten = takeoverProgress(batch.syncState)
    const rows = committed.rows
    // A view that failed is not tried again at every batch: its hash is kept here, not in the state row.
    if (batch.views !== undefined) written.viewsHash = batch.views.hash
    this.#written = written
    this.#prunedThrough = Math.max(this.#prunedThrough, pruned)
    this.#cursor = to
    this.#health.counts.changesApplied += batch.changes.length
    this.#health.counts.rowsReplicated += rows
    if (batch.changes.length > 0) {
      try {
        const now = new Date(this.#options.clock.now()).toISOString()
        // Removed by hand (`consumers remove --force`) while it runs: registered again at its position.
        if (!this.#consumers.ack(this.#consumerName, to, now)) this.#syncConsumer(to)
        this.#health.recordViewErrorAgain()
      } catch (err) {
        this.#log.debug({ err }, 'cannot record the destination position in the mirror')
      }
    }
    return { kind: 'applied', changes: batch.changes.length }
  }
}
