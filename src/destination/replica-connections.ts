// The replicator's two connections: its own read-only one to the mirror, and its Postgres session,
// on which every operation runs watched (postgres-session.ts): a long wait is reported with who
// holds the lock, a server that stays silent is cut off.
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { openMirror, type Mirror } from '../store/mirror-database.js'
import type { DestinationHealth } from './destination-health.js'
import { openSession, watched, withSchemaLock, type Session, type SessionLimits } from './postgres-session.js'
import { registerCopyFunctions, type OnNotInstant } from './postgres-types.js'

/** Ends a connection; one the server does not answer on is cut after a second. */
async function endClient(client: pg.Client): Promise<void> {
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => true,
    ),
    sleep(1_000).then(() => false),
  ])
  if (!ended) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

export interface ConnectionOptions {
  url: string
  schema: string
  mirrorPath: string
  clock: Clock
  limits: SessionLimits
  waitReportMs: number
}

export class ReplicaConnections {
  reader: Mirror | undefined
  client: pg.Client | undefined
  #session: Session | undefined
  #broken = false

  constructor(
    private readonly o: ConnectionOptions,
    private readonly log: Logger,
    private readonly health: DestinationHealth,
    private readonly onNotInstant: OnNotInstant,
  ) {}

  /** Opens the mirror's reader once; whether the Postgres session must be opened (none, or a broken one). */
  async openReader(): Promise<boolean> {
    if (this.reader === undefined) {
      this.reader = await openMirror(this.o.mirrorPath, { readonly: true })
      registerCopyFunctions(this.reader.sqlite, this.onNotInstant)
    }
    return this.client === undefined || this.#broken
  }

  /** Opens a new Postgres session (after dropping the one open) and returns its client. */
  async openSession(): Promise<pg.Client> {
    const session = await openSession(this.o.url, this.o.limits, this.o.clock, () => {
      this.#broken = true
    })
    const client = session.client
    this.#session = session
    this.client = client
    // The view DDL's string literals (quoteText) double quotes only: a backslash must stay a backslash.
    await client.query('SET standard_conforming_strings = on')
    return client
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

  /** Runs `fn` holding the schema's advisory lock (one process at a time creates or loads a schema). */
  schemaLock<T>(fn: () => Promise<T>): Promise<T> {
    const onBusy = (message: string) => this.log.info({ kind: 'lock' }, `Postgres destination: ${message}`)
    return withSchemaLock(this.client!, this.o.schema, onBusy, this.o.limits, fn)
  }

  async dropSession(): Promise<void> {
    const client = this.client
    this.client = undefined
    this.#session = undefined
    this.#broken = false
    if (client !== undefined) await endClient(client)
  }

  async close(): Promise<void> {
    const client = this.client
    this.client = undefined
    if (client !== undefined) await endClient(client)
    if (this.reader !== undefined) {
      const reader = this.reader
      this.reader = undefined
      await reader.close()
    }
  }
}
