// The process's Postgres connections for every account's destination: at most maxConnections
// sessions (destination.postgres.maxConnections), each lent to one destination for one operation (a
// batch, a load, the schema's setup) and given back, so a thousand accounts share a few connections.
// Waiting destinations are served in turn. A session is lent outside any transaction and lock. One
// left idle for idleTimeoutMs is closed, so a quiet process holds no connection.
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import type { Clock } from '../model/clock.js'
import { openSession, type Session, type SessionLimits } from './postgres-session.js'

export interface DestinationPoolSettings {
  url: string
  limits: SessionLimits
  clock: Clock
  /** The most Postgres connections open at once, for every account of the process together. */
  maxConnections: number
  /** How long a connection stays open unused before it is closed (default IDLE_TIMEOUT_MS). */
  idleTimeoutMs?: number
}

/** A connection unused this long is closed: a destination with changes to apply uses its session every poll (200 ms). */
export const IDLE_TIMEOUT_MS = 30_000

interface IdleSession {
  session: PooledSession
  /** Cancels the timer that closes it. */
  cancel: () => void
}

export interface PooledSession extends Session {
  /** The connection failed while idle (a server restart): never lent again. */
  readonly broken: boolean
}

/** Ends a connection; one the server does not answer on is cut after a second. */
export async function endClient(client: pg.Client): Promise<void> {
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => true,
    ),
    sleep(1_000).then(() => false),
  ])
  if (!ended) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}

export class DestinationPool {
  readonly settings: DestinationPoolSettings
  /** Idle sessions, the most recently given back last: that one is lent first, so the others can time out. */
  #idle: IdleSession[] = []
  #open = 0
  #waiting: (() => void)[] = []
  #ended = false

  constructor(settings: DestinationPoolSettings) {
    if (!Number.isInteger(settings.maxConnections) || settings.maxConnections < 1) {
      throw new Error(`maxConnections must be a positive integer, got ${settings.maxConnections}`)
    }
    this.settings = settings
  }

  /** Connections open now, lent or idle. */
  get size(): number {
    return this.#open
  }

  /** A session for one operation: an idle one, a new one while under the bound, or the next one given back. */
  async acquire(): Promise<PooledSession> {
    // Behind those already waiting: each destination gets its turn.
    if (this.#waiting.length > 0) await new Promise<void>((resolve) => this.#waiting.push(resolve))
    for (;;) {
      if (this.#ended) throw new Error('the destination pool is closed')
      const idle = this.#idle.pop()
      if (idle !== undefined) {
        idle.cancel()
        if (!idle.session.broken) return idle.session
        await this.#discard(idle.session)
        continue
      }
      if (this.#open < this.settings.maxConnections) {
        this.#open++
        try {
          return await this.#connect()
        } catch (err) {
          this.#open--
          this.#wake()
          throw err
        }
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve))
    }
  }

  /** Gives a session back; `discard` (or a broken one) closes it: after a failure its state is unknown. */
  release(session: PooledSession, options: { discard?: boolean } = {}): Promise<void> {
    if (options.discard === true || session.broken || this.#ended) return this.#discard(session)
    const entry: IdleSession = {
      session,
      cancel: this.settings.clock.setTimer(this.settings.idleTimeoutMs ?? IDLE_TIMEOUT_MS, () => this.#expire(entry), { background: true }),
    }
    this.#idle.push(entry)
    this.#wake()
    return Promise.resolve()
  }

  /** Closes every idle connection; lent ones close as they come back. */
  async end(): Promise<void> {
    this.#ended = true
    const idle = this.#idle.splice(0)
    for (const i of idle) i.cancel()
    await Promise.all(idle.map((i) => this.#discard(i.session)))
    for (const wake of this.#waiting.splice(0)) wake()
  }

  /** Closes a session that stayed idle past the timeout (unless it was lent meanwhile). */
  #expire(entry: IdleSession): void {
    const at = this.#idle.indexOf(entry)
    if (at < 0) return
    this.#idle.splice(at, 1)
    void this.#discard(entry.session)
  }

  #discard(session: PooledSession): Promise<void> {
    this.#open--
    this.#wake()
    return endClient(session.client)
  }

  #wake(): void {
    this.#waiting.shift()?.()
  }

  async #connect(): Promise<PooledSession> {
    const { url, limits, clock } = this.settings
    const failed = { broken: false }
    const session = await openSession(url, limits, clock, () => {
      failed.broken = true
    })
    const pooled: PooledSession = {
      ...session,
      get broken() {
        return failed.broken
      },
    }
    try {
      // The view DDL's string literals (quoteText) double quotes only: a backslash must stay a backslash.
      await session.client.query('SET standard_conforming_strings = on')
    } catch (err) {
      await endClient(session.client)
      throw err
    }
    return pooled
  }
}
