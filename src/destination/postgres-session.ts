// The destination's connection to Postgres: its session limits (lock and statement timeouts, TCP
// keepalives), the advisory lock that lets one process at a time create or load a schema's replica,
// and the watch over a statement that waits: after a while it asks Postgres, on a second short
// connection, what the statement waits for (who holds the lock), and cuts a connection whose server
// stays silent past the statement timeout (a frozen backend, a half-open connection).
import pg from 'pg'
import type { Clock } from '../model/clock.js'
import { DestinationError } from './postgres-errors.js'

export interface SessionLimits {
  /** How long a statement may wait for a lock (Postgres lock_timeout); 0: no limit. */
  lockTimeoutMs: number
  /** How long a statement may run (Postgres statement_timeout); 0: no limit. */
  statementTimeoutMs: number
}

/** How long the server may stay silent past the statement timeout before the connection is cut (at most the timeout again). */
const SILENCE_GRACE_MS = 30_000
/** TCP keepalive: the first probe after this much idle time, on both ends. */
const KEEPALIVE_IDLE_S = 30

export interface Session {
  client: pg.Client
  /** The server process of the connection (pg_stat_activity.pid). */
  pid: number
  /** When the server last sent anything on the connection (the session's clock). */
  lastHeard: () => number
  /** Ends the socket at once: the statement in flight fails, its transaction rolls back. */
  destroy: () => void
}

/** Connects with the limits set for the whole session; `onBroken` is called when the connection fails while idle. */
export async function openSession(url: string, limits: SessionLimits, clock: Clock, onBroken: () => void): Promise<Session> {
  const client = new pg.Client({
    connectionString: url,
    application_name: 'fsm-sync',
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_S * 1000,
  })
  // An idle connection closed by the server (a restart, pg_terminate_backend) must not crash the process.
  client.on('error', onBroken)
  await client.connect()
  const stream = (client as unknown as { connection?: { stream?: NodeJS.ReadableStream & { destroy(): void } } }).connection?.stream
  let heard = clock.now()
  stream?.on('data', () => {
    heard = clock.now()
  })
  // The server's keepalives too, so that it ends a session whose client is gone (and its locks with it).
  const [row] = (
    await client.query<{ pid: number }>(
      `SELECT pg_backend_pid() AS pid, set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false),
              set_config('tcp_keepalives_idle', $3, false), set_config('tcp_keepalives_interval', '10', false),
              set_config('tcp_keepalives_count', '3', false)`,
      [String(limits.lockTimeoutMs), String(limits.statementTimeoutMs), String(KEEPALIVE_IDLE_S)],
    )
  ).rows
  return { client, pid: row!.pid, lastHeard: () => heard, destroy: () => stream?.destroy() }
}

interface Holder {
  pid: number
  usename: string | null
  application_name: string | null
  client: string | null
  state: string | null
  xact_start: Date | null
  query: string | null
}

const HOLDER_COLUMNS = `a.pid, a.usename, a.application_name, a.client_addr::text AS client, a.state, a.xact_start, left(a.query, 120) AS query`

function describeHolder(h: Holder): string {
  const parts = [
    h.usename === null ? undefined : `user ${h.usename}`,
    h.application_name === null || h.application_name === '' ? undefined : `application ${h.application_name}`,
    h.client === null ? undefined : `from ${h.client}`,
    h.state === null ? undefined : h.state,
    h.xact_start === null ? undefined : `transaction open since ${h.xact_start.toISOString()}`,
    h.query === null || h.query === '' ? undefined : `last statement: ${h.query.replace(/\s+/g, ' ')}`,
  ].filter((p) => p !== undefined)
  return `pid ${h.pid} (${parts.join(', ')})`
}

/**
 * What the session `pid` waits for, asked on a connection of its own: the sessions holding the lock
 * it waits for, or its own state when nothing blocks it (the server is slow or does not answer).
 * Undefined when the server waits for fsm-sync (a COPY that fsm-sync is still sending).
 */
export async function describeWait(url: string, pid: number, waitedMs: number): Promise<string | undefined> {
  const side = new pg.Client({ connectionString: url, application_name: 'fsm-sync (wait report)', connectionTimeoutMillis: 5_000 })
  const seconds = Math.round(waitedMs / 1000)
  try {
    await side.connect()
    await side.query(`SELECT set_config('statement_timeout', '5000', false)`)
    const blockers = (
      await side.query<Holder>(`SELECT ${HOLDER_COLUMNS} FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1)) ORDER BY a.pid`, [
        pid,
      ])
    ).rows
    if (blockers.length > 0) {
      const fix = blockers.map((b) => b.pid).join(', ')
      return `waiting ${seconds} s for a lock held by ${blockers.map(describeHolder).join('; ')}: that transaction must end (COMMIT or ROLLBACK, or SELECT pg_terminate_backend(${fix}))`
    }
    const [own] = (
      await side.query<{ state: string | null; wait: string | null }>(
        `SELECT state, wait_event_type || ':' || wait_event AS wait FROM pg_stat_activity WHERE pid = $1`,
        [pid],
      )
    ).rows
    if (own === undefined) return `Postgres has not answered for ${seconds} s and its session (pid ${pid}) is gone`
    // An active statement reading from fsm-sync (a COPY being sent): Postgres is not the one waiting.
    if (own.state === 'active' && own.wait === 'Client:ClientRead') return undefined
    return `Postgres has not answered for ${seconds} s (session pid ${pid}: ${own.state ?? 'unknown state'}${own.wait === null ? '' : `, waiting on ${own.wait}`})`
  } catch (err) {
    return `Postgres has not answered for ${seconds} s (and a second connection could not ask why: ${(err as Error).message})`
  } finally {
    await side.end().catch(() => undefined)
  }
}

export interface WatchOptions {
  url: string
  clock: Clock
  limits: SessionLimits
  /** How long a statement may wait before the wait is reported (then again at the same interval). */
  reportAfterMs: number
  /** Told what the session waits for; `undefined` when the operation has ended. */
  onWait: (description: string | undefined) => void
}

/**
 * Runs `op` on the session under watch: a wait longer than reportAfterMs is described (onWait), and a
 * server silent for longer than the statement timeout allows is cut off.
 */
export async function watched<T>(session: Session, options: WatchOptions, op: () => Promise<T>): Promise<T> {
  const { clock, limits } = options
  const started = clock.now()
  const t = limits.statementTimeoutMs
  const silentLimit = t > 0 ? t + Math.min(SILENCE_GRACE_MS, t) : 0
  let done = false
  let reported = false
  let cancel = (): void => undefined
  const tick = (): void => {
    cancel = clock.setTimer(
      options.reportAfterMs,
      () => {
        if (done) return
        const now = clock.now()
        const silent = now - Math.max(started, session.lastHeard())
        if (silentLimit > 0 && silent >= silentLimit) {
          options.onWait(`Postgres sent nothing for ${Math.round(silent / 1000)} s, past the statement timeout: the connection is cut`)
          session.destroy()
          return
        }
        if (silent < options.reportAfterMs) {
          tick()
          return
        }
        void describeWait(options.url, session.pid, silent).then((d) => {
          if (done) return
          if (d !== undefined) {
            reported = true
            options.onWait(d)
          }
          tick()
        })
      },
      { background: true },
    )
  }
  tick()
  try {
    return await op()
  } finally {
    done = true
    cancel()
    if (reported) options.onWait(undefined)
  }
}

const LOCK_KEY = `hashtext('fsm-sync'), hashtext($1)`

/**
 * Runs `fn` holding the schema's advisory lock (with an account: that account's in the schema), so
 * that two processes never create one replica's tables, or load one account, at once. When another
 * holds it, says who and waits (up to the lock timeout).
 */
export async function withSchemaLock<T>(
  client: pg.Client,
  schemaName: string,
  account: string | undefined,
  onBusy: (holder: string) => void,
  limits: SessionLimits,
  fn: () => Promise<T>,
): Promise<T> {
  const schema = account === undefined ? schemaName : `${schemaName} (account ${account})`
  const got = (await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LOCK_KEY}) AS ok`, [schema])).rows[0]!.ok
  if (!got) {
    const holders = (
      await client.query<Holder>(
        `SELECT ${HOLDER_COLUMNS} FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.classid = hashtext('fsm-sync')::oid AND l.objid = hashtext($1)::oid AND l.objsubid = 2`,
        [schema],
      )
    ).rows
    const who = holders.length === 0 ? 'another fsm-sync process' : `another fsm-sync process, ${holders.map(describeHolder).join('; ')},`
    onBusy(`${who} is creating or loading the replica in schema ${schema}: waiting for it`)
    try {
      await client.query(`SELECT pg_advisory_lock(${LOCK_KEY})`, [schema])
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03') throw err
      const limit = Math.round(limits.lockTimeoutMs / 1000)
      throw new DestinationError(
        'transient',
        `${who} is creating or loading the replica in schema ${schema} and has not finished within the lock timeout (${limit} s, destination.postgres.lockTimeoutSeconds); run replicate again once it has`,
        { cause: err },
      )
    }
  }
  try {
    return await fn()
  } finally {
    await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`, [schema]).catch(() => undefined)
  }
}
