// Helpers of sharded-takeover.bench.ts: a replica (`fsm-sync run` with FSM_SHARDING=on) as a child
// process whose log lines are parsed as they come, the leases and the warehouse's state rows read
// from Postgres, an owner's mirror read for its first sweeps after a time, and the emulator's log.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { appendFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import Database from 'better-sqlite3'
import type pg from 'pg'
import { ensureCoordinationSchema, type CoordinationTables } from '../src/coordination/coordination-schema.js'
import { heartbeat, registerReplica } from '../src/coordination/membership.js'
import { cleanEnv, ROOT } from '../test/support/run-cli.js'
import { control } from './many-accounts-lib.js'

export interface Replica {
  name: string
  dataDir: string
  child: ChildProcess
  exited: Promise<number | null>
  /** Log lines by message, counted (pino's `msg`). */
  messages: Map<string, number>
  /** Warnings and errors by message (numbers made N, cut at 110 characters), counted. */
  problems: Map<string, number>
  /** Its "takeover: the mirror is (not) restored from the warehouse" lines, by account. */
  restores: Map<string, Restore>
}

export interface Restore {
  restored: boolean
  durationMs: number
  /** When the line was logged (ms): the restore's end. */
  at: number
  /** Its runtime's "takeover: the sweeps go on" line: a reconciliation follows its first sweep. */
  reconcile?: boolean
  rows?: number
  adopted?: boolean
  reason?: string
}

/** `fsm-sync run` from source as one replica named `name`, its own data folder, logs at info. */
export function startReplica(name: string, dataDir: string, env: Record<string, string>): Replica {
  const tsx = createRequire(path.join(ROOT, 'package.json')).resolve('tsx')
  const child = spawn(process.execPath, ['--import', tsx, path.join(ROOT, 'src/cli/entry.ts'), 'run'], {
    cwd: ROOT,
    env: cleanEnv({ ...env, FSM_REPLICA_NAME: name, FSM_DATA_DIR: dataDir, FSM_LOG_LEVEL: 'info' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout?.resume()
  const r: Replica = {
    name,
    dataDir,
    child,
    exited: new Promise((resolve) => child.on('close', (code) => resolve(code))),
    messages: new Map(),
    problems: new Map(),
    restores: new Map(),
  }
  // FSM_BENCH_LOG_DIR keeps each replica's whole log (<name>.log) for a look after the run.
  const keep = process.env.FSM_BENCH_LOG_DIR === undefined ? undefined : path.join(process.env.FSM_BENCH_LOG_DIR, `${name}.log`)
  let partial = ''
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    if (keep !== undefined) appendFileSync(keep, d)
    const parts = (partial + d).split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) {
      let doc: {
        level?: string
        msg?: string
        error?: string
        reason?: string
        account?: string
        durationMs?: number
        rows?: number
        adopted?: boolean
        time?: string
        reconcile?: boolean
      }
      try {
        doc = JSON.parse(line) as typeof doc
      } catch {
        doc = { level: 'error', msg: line.slice(0, 300) }
      }
      const msg = doc.msg ?? ''
      const key = doc.reason === undefined ? msg : `${msg} (${doc.reason})`
      r.messages.set(key, (r.messages.get(key) ?? 0) + 1)
      if (msg.startsWith('takeover: the mirror is') && doc.account !== undefined)
        r.restores.set(doc.account, {
          restored: msg.includes('is restored'),
          // An earlier release reconciled after every restore; this one says so in its next line.
          reconcile: msg.includes('is restored'),
          durationMs: doc.durationMs ?? Number.NaN,
          at: doc.time === undefined ? Number.NaN : Date.parse(doc.time),
          ...(doc.rows === undefined ? {} : { rows: doc.rows }),
          ...(doc.adopted === undefined ? {} : { adopted: doc.adopted }),
          ...(doc.reason === undefined ? {} : { reason: doc.reason }),
        })
      const restore = doc.account === undefined ? undefined : r.restores.get(doc.account)
      if (msg.startsWith('takeover: the sweeps go on') && restore !== undefined) restore.reconcile = doc.reconcile === true
      if (['warn', 'error', 'fatal'].includes(doc.level ?? '') && !msg.startsWith('fsm-sync run: listening on')) {
        // Alike when they differ only in numbers (pids, seconds, ids): counted as one.
        const text = `${msg}${doc.error === undefined ? '' : `: ${doc.error}`}`.replace(/[0-9a-f]*\d[0-9a-f]*/g, 'N').slice(0, 110)
        r.problems.set(text, (r.problems.get(text) ?? 0) + 1)
      }
    }
  })
  return r
}

export interface Lease {
  owner: string | null
  epoch: number
  acquiredAt: number
  live: boolean
}

/** Every account's lease row (live: owned and unexpired by the server's clock); empty before the tables exist. */
export async function leases(pool: pg.Pool): Promise<Map<string, Lease>> {
  const rows = await pool
    .query<{ account_id: string; owner: string | null; epoch: string; at: string; live: boolean }>(
      `SELECT account_id, owner, epoch, floor(extract(epoch FROM acquired_at) * 1000)::bigint AS at,
              (owner IS NOT NULL AND expires_at > now()) AS live
         FROM fsm_coordination.account_leases`,
    )
    .then((r) => r.rows)
    .catch((err: unknown) => {
      if ((err as { code?: string }).code === '42P01') return []
      throw err
    })
  return new Map(rows.map((r) => [r.account_id, { owner: r.owner, epoch: Number(r.epoch), acquiredAt: Number(r.at), live: r.live }]))
}

/** The warehouse's replicated change_log position of each account (its state row); empty before the table exists. */
export async function warehouseSeqs(pool: pg.Pool, schema = 'fsm'): Promise<Map<string, number>> {
  const rows = await pool
    .query<{ account_id: string; seq: string }>(`SELECT account_id, max(seq) AS seq FROM "${schema}"._fsm_sync_state GROUP BY account_id`)
    .then((r) => r.rows)
    .catch((err: unknown) => {
      if ((err as { code?: string }).code === '42P01') return []
      throw err
    })
  return new Map(rows.map((r) => [r.account_id, Number(r.seq)]))
}

/** Read-only connections to mirror files, by path, opened on first use (undefined until the file exists). */
export class MirrorFiles {
  readonly #open = new Map<string, Database.Database>()

  get(file: string): Database.Database | undefined {
    let db = this.#open.get(file)
    if (db !== undefined) return db
    try {
      db = new Database(file, { readonly: true, fileMustExist: true })
      db.pragma('busy_timeout = 2000')
    } catch {
      return undefined
    }
    this.#open.set(file, db)
    return db
  }

  closeAll(): void {
    for (const db of this.#open.values()) db.close()
    this.#open.clear()
  }
}

export const mirrorOf = (r: Replica, accountId: string): string => path.join(r.dataDir, accountId, 'mirror.db')

/**
 * When every one of `streams` had ended its first successful sweep started at or after `since`
 * (ms), by the mirror's own sync_runs; undefined while one has not.
 */
export function sweptAllSince(db: Database.Database, streams: readonly string[], since: number): number | undefined {
  let rows: { stream: string; started_at: string; ended_at: string | null }[]
  try {
    rows = db
      .prepare(`SELECT stream, started_at, ended_at FROM sync_runs WHERE kind = 'sweep' AND outcome = 'success'`)
      .all() as typeof rows
  } catch {
    return undefined
  }
  let last = 0
  for (const s of streams) {
    let first = Number.POSITIVE_INFINITY
    for (const r of rows)
      if (r.stream === s && r.ended_at !== null && Date.parse(r.started_at) >= since) first = Math.min(first, Date.parse(r.ended_at))
    if (first === Number.POSITIVE_INFINITY) return undefined
    last = Math.max(last, first)
  }
  return last
}

/** When the first reconciliation started at or after `since` (ms) ended, by the mirror's sync_runs; undefined while none has. */
export function reconciledSince(db: Database.Database, since: number): number | undefined {
  try {
    const rows = db.prepare(`SELECT started_at, ended_at FROM sync_runs WHERE kind = 'reconcile' AND ended_at IS NOT NULL`).all() as {
      started_at: string
      ended_at: string
    }[]
    const ends = rows.filter((r) => Date.parse(r.started_at) >= since).map((r) => Date.parse(r.ended_at))
    return ends.length === 0 ? undefined : Math.min(...ends)
  } catch {
    return undefined
  }
}

/** A job's `updated_at` in a mirror; undefined when absent or while the new owner's file has no tables yet. */
export function mirrorJobUpdatedAt(db: Database.Database, jobId: string): string | undefined {
  try {
    return db.prepare('SELECT updated_at FROM jobs WHERE id = ?').pluck().get(jobId) as string | undefined
  } catch {
    return undefined
  }
}

/** The mirror's last change_log position (0 when empty or unreadable). */
export function mirrorSeq(db: Database.Database): number {
  try {
    return (db.prepare('SELECT coalesce(max(seq), 0) FROM change_log').pluck().get() as number) ?? 0
  } catch {
    return 0
  }
}

export interface LoggedRequest {
  startedAt: number
  method: string
  path: string
  status: number
}

/** An account's API requests in the emulator's log (control routes left out), in arrival order. */
export async function apiRequests(controlUrl: string): Promise<LoggedRequest[]> {
  const entries = await control<{ startedAt: string; method: string; path: string; status: number }[]>(controlUrl, 'GET', '/requests')
  return entries
    .filter((e) => e.path.startsWith('/api/'))
    .map((e) => ({ startedAt: Date.parse(e.startedAt), method: e.method, path: e.path, status: e.status }))
    .sort((a, b) => a.startedAt - b.startedAt)
}

/** `GET /api/v1/jobs/123` -> `GET jobs/:id`: a request's route, ids left out. */
export function routeOf(q: LoggedRequest): string {
  const parts = q.path.replace(/^\/api\/(v1\/)?/, '').split('/')
  return `${q.method} ${parts.map((p) => (/\d/.test(p) ? ':id' : p)).join('/')}`
}

/** `/api/v1/jobs/123` -> `jobs`; `/api/v1/objects/equipment/records` -> `objects/equipment`. */
export function resourceOf(p: string): string {
  const parts = p.replace(/^\/api\/(v1\/)?/, '').split('/')
  return parts[0] === 'objects' && parts[1] !== undefined ? `objects/${parts[1]}` : (parts[0] ?? p)
}

/**
 * Registers `names` as live replicas before their processes start, and heartbeats each until its
 * process registers itself (a new incarnation): the first replica up then takes only its own share,
 * and no account moves while the three start. Resolves a function that stops the heartbeats.
 */
export async function preRegister(pool: pg.Pool, names: readonly string[]): Promise<() => void> {
  const client = await pool.connect()
  let t: CoordinationTables
  try {
    t = await ensureCoordinationSchema(client)
  } finally {
    client.release()
  }
  const mine = names.map((name) => ({ name, incarnation: randomUUID() }))
  for (const me of mine) await registerReplica(pool, t, me)
  let pending = [...mine]
  const timer = setInterval(() => {
    void Promise.all(pending.map(async (me) => ((await heartbeat(pool, t, me).catch(() => true)) ? me : undefined))).then(
      (kept) => (pending = kept.filter((me) => me !== undefined)),
    )
  }, 1000)
  return () => clearInterval(timer)
}

/** The `updated_at` of a job in the warehouse (schema `fsm`), undefined when absent. */
export async function warehouseJobUpdatedAt(pool: pg.Pool, accountId: string, jobId: string): Promise<string | undefined> {
  const rows = await pool
    .query<{ updated_at: string | Date }>(`SELECT updated_at FROM fsm.jobs WHERE account_id = $1 AND id = $2`, [accountId, jobId])
    .then((r) => r.rows)
    .catch(() => [])
  const v = rows[0]?.updated_at
  return v === undefined ? undefined : v instanceof Date ? v.toISOString() : v
}

/** The `n` most frequent entries, most first, as `count× key`. */
export function top(counts: ReadonlyMap<string, number>, n: number): string[] {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, c]) => `${c}× ${k}`)
}
