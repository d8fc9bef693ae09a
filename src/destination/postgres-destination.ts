// The replicator of one account: follows its mirror's change_log into the Postgres schema all accounts
// share (docs/architecture.md, The Postgres destination; docs/postgres.md), on sessions the process's
// pool lends (destination-pool.ts). It only sequences the units, which share a ReplicaContext
// (replica-context.ts): the schema's setup and the load decision (replica-identity.ts), the load
// (replica-load.ts), then batch after batch (replica-batches.ts). Killed at any moment, the next
// start goes on from the cursor; a failing server is retried with back-off while sweeps and
// webhooks go on.
import { setTimeout as sleep } from 'node:timers/promises'
import { ChangeLogConsumers, lastChangeSeq } from '../store/repositories/change-log-consumers.js'
import { DestinationError, describeTarget, explainDestinationError } from './postgres-errors.js'
import { DestinationPool } from './destination-pool.js'
import { DEFAULT_ACCOUNT } from './postgres-upgrade.js'
import { planTables } from './batch-plan.js'
import { destinationConsumerName, POSTGRES_CONSUMER } from './consumer-name.js'
import { leaseLost, type CatchUpSummary, type DestinationStatus, type PostgresDestinationOptions } from './destination-options.js'
import { DestinationHealth } from './destination-health.js'
import { ReplicaConnections } from './replica-connections.js'
import { emptyWritten, tablesHashOf } from './replica-state.js'
import type { ReplicaContext } from './replica-context.js'
import { connectReplica, replicaLoadReason, syncConsumer } from './replica-identity.js'
import { loadReplica } from './replica-load.js'
import { applyBatch } from './replica-batches.js'

export { destinationConsumerName, POSTGRES_CONSUMER }
export type { CatchUpSummary, DestinationStatus, PostgresDestinationOptions } from './destination-options.js'

/** Batches catchUp's last pass may take before it gives up on a mirror that never stops changing. */
const FINAL_PASSES = 1000

export class PostgresDestination {
  readonly #ctx: ReplicaContext
  readonly #pool: DestinationPool
  /** A pool of its own (none given): ended with the destination. */
  readonly #ownPool: boolean
  #stop = new AbortController()
  #loop: Promise<void> | undefined

  constructor(options: PostgresDestinationOptions) {
    const o = {
      batchSize: 1000,
      pollMs: 200,
      snapshotCheckMs: 5_000,
      retry: { minMs: 500, maxMs: 30_000 },
      limits: { lockTimeoutMs: 30_000, statementTimeoutMs: 900_000 },
      waitReportMs: 10_000,
      ...options,
      accountId: options.accountId ?? DEFAULT_ACCOUNT,
    }
    this.#ownPool = options.pool === undefined
    this.#pool = options.pool ?? new DestinationPool({ url: o.url, limits: o.limits, clock: o.clock, maxConnections: 1 })
    const log = options.logger.child({ component: 'destination', destination: 'postgres', schema: options.schema, account: o.accountId })
    const tables = planTables(options.tables)
    const consumers = new ChangeLogConsumers(options.mirror)
    const consumerName = destinationConsumerName(options.url, options.schema)
    const where = { target: describeTarget(o.url), schema: o.schema }
    const health = new DestinationHealth(log, options.clock, consumers, consumerName, where)
    const onNotInstant = (): void => {
      health.counts.timesNulled++
    }
    this.#ctx = {
      options: o,
      fence: options.fence,
      epoch: options.epoch,
      log,
      tables,
      byName: new Map(tables.map((t) => [t.spec.name, t])),
      tablesHash: tablesHashOf(options.tables),
      consumers,
      consumerName,
      conn: new ReplicaConnections({ ...o, pool: this.#pool }, log, health, onNotInstant),
      health,
      where,
      onNotInstant,
      position: {
        cursor: null,
        written: emptyWritten(),
        loadedAt: undefined,
        mirrorId: undefined,
        syncStateWritten: undefined,
        prunedThrough: 0,
        schemaReload: null,
        lastSnapshotCheck: -Infinity,
        forceSnapshotCheck: true,
      },
    }
  }

  /** Its name in change_log_consumers. */
  get consumerName(): string {
    return this.#ctx.consumerName
  }

  get schema(): string {
    return this.#ctx.options.schema
  }

  get accountId(): string {
    return this.#ctx.options.accountId
  }

  /** Starts following the mirror in the background until stop(). Failures are retried with back-off. */
  start(): void {
    if (this.#loop !== undefined) return
    const target = describeTarget(this.#ctx.options.url)
    this.#ctx.log.info({ target }, `replicating the mirror to Postgres at ${target}, schema ${this.#ctx.options.schema}`)
    this.#loop = this.#follow(this.#stop.signal)
  }

  /** Stops following: the batch in flight commits or rolls back, within about two seconds. */
  async stop(): Promise<void> {
    this.#stop.abort()
    if (this.#loop !== undefined) {
      const settled = await Promise.race([this.#loop.then(() => true), sleep(2_000).then(() => false)])
      // A server that does not answer: ending the connection fails the query in flight (its transaction rolls back).
      if (!settled) await this.#ctx.conn.dropSession()
      await this.#loop
    }
    await this.close()
    this.#ctx.health.state = 'stopped'
  }

  async close(): Promise<void> {
    await this.#ctx.conn.close()
    if (this.#ownPool) await this.#pool.end()
  }

  status(): DestinationStatus {
    return this.#ctx.health.status(this.#ctx.options.mirror, this.#ctx.position.cursor)
  }

  /**
   * Brings the destination up to the mirror's newest change as of the call, loading it first when
   * it needs a load, and returns what it did. Throws a DestinationError on failure.
   */
  async catchUp(options: { reseed?: boolean } = {}): Promise<CatchUpSummary> {
    const started = this.#ctx.options.clock.now()
    const before = { ...this.#ctx.health.counts }
    try {
      await connectReplica(this.#ctx)
      const reseed = options.reseed === true
      const loadReason = reseed ? 'asked for (--reseed)' : await this.#ctx.conn.watch(() => replicaLoadReason(this.#ctx))
      let loaded = loadReason
      let loadedRows = 0
      if (loadReason !== null) {
        const n = await loadReplica(this.#ctx, loadReason, reseed)
        // Another process loaded it meanwhile (it held the schema's lock): nothing to load any more.
        if (n === undefined) loaded = null
        else loadedRows = n
      }
      const target = lastChangeSeq(this.#ctx.conn.reader!.sqlite)
      for (;;) {
        const outcome = await applyBatch(this.#ctx)
        if (outcome.kind === 'needs-load') {
          loaded = outcome.reason
          loadedRows += (await loadReplica(this.#ctx, outcome.reason)) ?? 0
          continue
        }
        if (outcome.kind === 'idle' || (this.#ctx.position.cursor ?? 0) >= target) break
      }
      // A last pass compares the tables without change_log entries, now that the changes are in, and
      // goes on until a pass applies nothing (changes that came meanwhile, a load the pruning asks for).
      this.#ctx.position.forceSnapshotCheck = true
      for (let pass = 0; ; pass++) {
        if (pass >= FINAL_PASSES) {
          throw new DestinationError(
            'transient',
            `the mirror kept changing: still not caught up after ${FINAL_PASSES} batches; run replicate again`,
          )
        }
        const outcome = await applyBatch(this.#ctx)
        if (outcome.kind === 'needs-load') {
          loaded = outcome.reason
          loadedRows += (await loadReplica(this.#ctx, outcome.reason)) ?? 0
          continue
        }
        if (outcome.kind === 'idle') break
      }
      this.#ctx.health.state = 'following'
      this.#ctx.health.lastError = undefined
      await this.#ctx.conn.release()
      return {
        loaded,
        loadedRows,
        changesApplied: this.#ctx.health.counts.changesApplied - before.changesApplied,
        rowsWritten: this.#ctx.health.counts.rowsReplicated - before.rowsReplicated,
        cursor: this.#ctx.position.cursor ?? 0,
        durationMs: Math.round(this.#ctx.options.clock.now() - started),
      }
    } catch (err) {
      const e = this.#explain(err)
      // The caller shows the error (replicate prints it): logged here only at debug, and a destination
      // never loaded is not registered for it.
      this.#ctx.health.recordError(e, { oneShot: true })
      await this.#ctx.conn.dropSession()
      throw e
    }
  }

  async #follow(signal: AbortSignal): Promise<void> {
    let delay = this.#ctx.options.retry.minMs
    let needsPrepare = true
    while (!signal.aborted) {
      try {
        if (needsPrepare) {
          await connectReplica(this.#ctx)
          const reason = await this.#ctx.conn.watch(() => replicaLoadReason(this.#ctx))
          if (reason !== null) await loadReplica(this.#ctx, reason)
          needsPrepare = false
        }
        const outcome = await applyBatch(this.#ctx)
        // The session goes back to the pool after each batch: the other accounts take their turns.
        await this.#ctx.conn.release()
        if (outcome.kind === 'needs-load') {
          await loadReplica(this.#ctx, outcome.reason)
          continue
        }
        this.#ctx.health.state = 'following'
        if (this.#ctx.health.lastError !== undefined) {
          this.#ctx.log.info('the destination is replicating again')
          this.#ctx.health.lastError = undefined
          syncConsumer(this.#ctx, this.#ctx.position.cursor ?? 0)
        }
        delay = this.#ctx.options.retry.minMs
        if (outcome.kind === 'idle') await this.#ctx.options.clock.sleep(this.#ctx.options.pollMs, signal).catch(() => undefined)
      } catch (err) {
        if (signal.aborted) break
        if (leaseLost(err)) {
          // Another replica owns the account now: its transaction rolled back; nothing more is written from here.
          this.#ctx.log.warn(
            { reason: err instanceof Error ? err.message : String(err) },
            'the destination stops: this replica no longer owns the account (fenced), its last batch was rolled back',
          )
          await this.#ctx.conn.dropSession()
          this.#ctx.health.state = 'stopped'
          break
        }
        const e = this.#explain(err)
        this.#ctx.health.recordError(e, { oneShot: false })
        needsPrepare = true
        await this.#ctx.conn.dropSession()
        // A problem the user must fix is retried slowly: it is logged once, not once per attempt.
        const wait = e.kind === 'transient' || e.kind === 'connect' ? delay : this.#ctx.options.retry.maxMs
        await this.#ctx.options.clock.sleep(wait, signal).catch(() => undefined)
        delay = Math.min(delay * 2, this.#ctx.options.retry.maxMs)
      }
    }
  }

  /** The error in words, with the wait reported before a statement gave up waiting (who held the lock). */
  #explain(err: unknown): DestinationError {
    const e = explainDestinationError(err, this.#ctx.options.url, this.#ctx.options.schema)
    const wait = this.#ctx.health.takeLastWait()
    if (wait === undefined || e.kind !== 'transient') return e
    return new DestinationError(e.kind, `${e.message} (before that: ${wait})`, { cause: err })
  }
}
