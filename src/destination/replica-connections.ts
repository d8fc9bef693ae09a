// The replicator's two connections: its own read-only one to the mirror, and a Postgres session
// lent by the process's pool (destination-pool.ts) for each operation, on which every operation runs
// watched (postgres-session.ts): a long wait is reported with who holds the lock, a server that
// stays silent is cut off.
import type pg from 'pg'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { openMirror, type Mirror } from '../store/sqlite/mirror-database.js'
import type { DestinationHealth } from './destination-health.js'
import type { DestinationPool, PooledSession } from './destination-pool.js'
import { watched, withSchemaLock, type SessionLimits } from './postgres-session.js'
import { registerCopyFunctions, type OnNotInstant } from './postgres-types.js'

export interface ConnectionOptions {
  url: string
  schema: string
  accountId: string
  mirrorPath: string
  clock: Clock
  limits: SessionLimits
  waitReportMs: number
  pool: DestinationPool
}

export class ReplicaConnections {
  reader: Mirror | undefined
  client: pg.Client | undefined
  #session: PooledSession | undefined

  constructor(
    private readonly o: ConnectionOptions,
    private readonly log: Logger,
    private readonly health: DestinationHealth,
    private readonly onNotInstant: OnNotInstant,
  ) {}

  /** Opens the mirror's reader once. */
  async openReader(): Promise<void> {
    if (this.reader === undefined) {
      this.reader = await openMirror(this.o.mirrorPath, { readonly: true })
      registerCopyFunctions(this.reader.sqlite, this.onNotInstant)
    }
  }

  /** A session from the pool, kept until release() (the one held, when it is not broken). */
  async acquire(): Promise<pg.Client> {
    if (this.#session?.broken === true) await this.dropSession()
    if (this.#session === undefined) {
      this.#session = await this.o.pool.acquire()
      this.client = this.#session.client
    }
    return this.client!
  }

  /** Gives the session back to the pool, for another account's turn. */
  async release(): Promise<void> {
    const session = this.#session
    this.#session = undefined
    this.client = undefined
    if (session !== undefined) await this.o.pool.release(session)
  }

  /** Runs `op` on the connection under watch: a long wait is reported with who holds the lock, a silent server is cut off. */
  async watch<T>(op: () => Promise<T>): Promise<T> {
    const session = this.#session
    if (session === undefined) return op()
    this.health.clearLastWait()
    const { url, clock, limits } = this.o
    let logged = false
    const reportAfterMs = limits.lockTimeoutMs > 0 ? Math.min(this.o.waitReportMs, limits.lockTimeoutMs / 2) : this.o.waitReportMs
    return watched(session, { url, clock, limits, reportAfterMs, onWait: (d) => this.health.onWait(d, !logged && (logged = true)) }, op)
  }

  /** Runs `fn` holding the schema's advisory lock (one process at a time creates a schema's tables). */
  schemaLock<T>(fn: () => Promise<T>): Promise<T> {
    const onBusy = (message: string) => this.log.info({ kind: 'lock' }, `Postgres destination: ${message}`)
    return withSchemaLock(this.client!, this.o.schema, undefined, onBusy, this.o.limits, fn)
  }

  /** Runs `fn` holding the account's advisory lock in the schema (one process at a time loads an account). */
  accountLock<T>(fn: () => Promise<T>): Promise<T> {
    const onBusy = (message: string) => this.log.info({ kind: 'lock' }, `Postgres destination: ${message}`)
    return withSchemaLock(this.client!, this.o.schema, this.o.accountId, onBusy, this.o.limits, fn)
  }

  /** Closes the session (after a failure its state is unknown): the pool opens another. */
  async dropSession(): Promise<void> {
    const session = this.#session
    this.#session = undefined
    this.client = undefined
    if (session !== undefined) await this.o.pool.release(session, { discard: true })
  }

  async close(): Promise<void> {
    await this.release()
    if (this.reader !== undefined) {
      const reader = this.reader
      this.reader = undefined
      await reader.close()
    }
  }
}
