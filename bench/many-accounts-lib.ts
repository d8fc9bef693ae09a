// Helpers of many-accounts.bench.ts: the two child processes (the multi-account emulator and
// `fsm-sync run`), what /proc says about a process, reading each account's mirror, and signed
// webhook deliveries sent open loop at a fixed rate.
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import { Pool } from 'undici'
import { sign } from '../src/webhooks/signature.js'
import { spawnCli, cleanEnv, ROOT } from '../test/support/run-cli.js'

export interface EmulatorAccountInfo {
  id: string
  apiKey: string
  controlUrl: string
}

export interface Child {
  child: ChildProcess
  /** Everything written to stderr (bounded: the first 400 lines, then a count). */
  lines: string[]
  dropped: number
  /** Lines at warn and above, wherever they came (the first 50), and their count. */
  warnings: string[]
  warned: number
  exited: Promise<number | null>
}

function watch(child: ChildProcess): Child {
  const c: Child = {
    child,
    lines: [],
    dropped: 0,
    warnings: [],
    warned: 0,
    exited: new Promise((resolve) => child.on('close', (code) => resolve(code))),
  }
  let partial = ''
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    const parts = (partial + d).split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) {
      if (c.lines.length < 400) c.lines.push(line)
      else c.dropped++
      if (/"level":(40|50|60)/.test(line) && c.warned++ < 50) c.warnings.push(line)
    }
  })
  return c
}

/** `fsm-sync emulator --accounts N --rows R --json` in its own process; resolves once it listens. */
export async function startEmulatorChild(
  accounts: number,
  rows: number,
): Promise<Child & { url: string; accounts: EmulatorAccountInfo[] }> {
  const child = spawnCli(['emulator', '--accounts', String(accounts), '--rows', String(rows), '--port', '0', '--json'], cleanEnv())
  const c = watch(child)
  const doc = await new Promise<{ url: string; accounts: EmulatorAccountInfo[] }>((resolve, reject) => {
    let text = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      text += d
      const nl = text.indexOf('\n')
      if (nl >= 0) resolve(JSON.parse(text.slice(0, nl)) as { url: string; accounts: EmulatorAccountInfo[] })
    })
    void c.exited.then((code) => reject(new Error(`the emulator exited (${code}): ${c.lines.join('\n')}`)))
  })
  return { ...c, ...doc }
}

/**
 * `fsm-sync run` from source, as the other benches start the daemon. FSM_BENCH_NODE_ARGS, e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof", is given to the daemon's node (diagnosis);
 * FSM_BENCH_DAEMON_NOFILE a `ulimit -n` for it.
 */
export function startDaemonChild(env: Record<string, string>): Child {
  const extra = (process.env.FSM_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')
  const tsx = createRequire(path.join(ROOT, 'package.json')).resolve('tsx')
  const args = [...extra, '--import', tsx, path.join(ROOT, 'src/cli/entry.ts'), 'run']
  // FSM_BENCH_DAEMON_NOFILE=1024: the daemon alone runs under that `ulimit -n` (soft and hard).
  const nofile = process.env.FSM_BENCH_DAEMON_NOFILE
  const child =
    nofile === undefined || nofile === ''
      ? spawn(process.execPath, args, { cwd: ROOT, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('sh', ['-c', `ulimit -n ${Number(nofile)} && exec "$0" "$@"`, process.execPath, ...args], {
          cwd: ROOT,
          env: cleanEnv(env),
          stdio: ['ignore', 'pipe', 'pipe'],
        })
  child.stdout?.resume()
  return watch(child)
}

export async function stopChild(c: Child, timeoutMs = 60_000): Promise<number | null> {
  c.child.kill('SIGTERM')
  const timer = setTimeout(() => c.child.kill('SIGKILL'), timeoutMs)
  const code = await c.exited
  clearTimeout(timer)
  return code
}

/** The process's descriptors by what they point at (mirror files, sockets, pipes, the rest). */
export function descriptorKinds(pid: number): Record<string, number> {
  const kinds: Record<string, number> = {}
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`)
    } catch {
      continue
    }
    const kind = /mirror\.db-wal$/.test(target)
      ? 'mirror -wal'
      : /mirror\.db-shm$/.test(target)
        ? 'mirror -shm'
        : /mirror\.db$/.test(target)
          ? 'mirror'
          : /intake-journal/.test(target)
            ? 'intake journal'
            : (/^(socket|pipe|anon_inode)/.exec(target)?.[1] ?? 'other')
    kinds[kind] = (kinds[kind] ?? 0) + 1
  }
  return kinds
}

export interface ProcSample {
  /** user + system CPU seconds since the process started. */
  cpuSeconds: number
  rssBytes: number
  peakRssBytes: number
  fds: number
  threads: number
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS = 100

export function procSample(pid: number): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
  return {
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS,
    rssBytes: kb('VmRSS'),
    peakRssBytes: kb('VmHWM'),
    fds: readdirSync(`/proc/${pid}/fd`).length,
    threads: Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN),
  }
}

export function openFileLimit(pid: number): string {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'))
  return (line ?? '').replace(/\s+/g, ' ').trim()
}

/** A read-only connection to an account's mirror, opened on first use (undefined until the file exists). */
export class Mirrors {
  readonly #open = new Map<string, Database.Database>()
  constructor(readonly path: (id: string) => string) {}

  get(id: string): Database.Database | undefined {
    let db = this.#open.get(id)
    if (db !== undefined) return db
    try {
      db = new Database(this.path(id), { readonly: true, fileMustExist: true })
      db.pragma('busy_timeout = 2000')
    } catch {
      return undefined
    }
    this.#open.set(id, db)
    return db
  }

  close(id?: string): void {
    for (const [k, db] of this.#open) {
      if (id !== undefined && k !== id) continue
      db.close()
      this.#open.delete(k)
    }
  }
}

/** The streams of an account that have had a successful sweep. */
export function sweptStreams(db: Database.Database): Set<string> {
  try {
    const rows = db.prepare(`SELECT DISTINCT stream FROM sync_runs WHERE kind = 'sweep' AND outcome = 'success'`).all() as {
      stream: string
    }[]
    return new Set(rows.map((r) => r.stream))
  } catch {
    return new Set()
  }
}

export interface Delivery {
  path: string
  body: Buffer
  headers: Record<string, string>
}

/** A job.updated delivery for `job` (the upstream's own document), signed with the account's secret. */
export function jobDelivery(accountId: string, secret: string, job: Record<string, unknown>, n: number): Delivery {
  const body = Buffer.from(JSON.stringify(job))
  return {
    path: `/webhooks/${accountId}`,
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-event': 'job.updated',
      'x-service-delivery': `bench-many-${n}`,
      'x-service-signature': sign(secret, body),
    },
  }
}

export const quantile = (xs: readonly number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

/** Open loop: the deliveries at `rate` a second over keep-alive connections; latency from each one's scheduled time. */
export async function sendAtRate(
  origin: string,
  deliveries: readonly Delivery[],
  rate: number,
): Promise<{ latencies: number[]; lags: number[]; statuses: Record<number, number>; seconds: number; endedAt: number }> {
  const pool = new Pool(origin, { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 })
  const latencies: number[] = []
  /** How late each request left this process (its own event loop, on the shared cores). */
  const lags: number[] = []
  const statuses: Record<number, number> = {}
  const inFlight: Promise<void>[] = []
  const t0 = performance.now()
  try {
    for (let i = 0; i < deliveries.length;) {
      const due = t0 + (i * 1000) / rate
      const now = performance.now()
      if (due > now) {
        await new Promise((r) => setTimeout(r, Math.max(0, due - now)))
        continue
      }
      for (; i < deliveries.length && t0 + (i * 1000) / rate <= performance.now(); i++) {
        const scheduled = t0 + (i * 1000) / rate
        const d = deliveries[i]!
        lags.push(performance.now() - scheduled)
        inFlight.push(
          pool
            .request({ method: 'POST', path: d.path, headers: d.headers, body: d.body })
            .then(async (res) => {
              await res.body.dump()
              statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
              latencies.push(performance.now() - scheduled)
            })
            .catch(() => {
              statuses[0] = (statuses[0] ?? 0) + 1
            }),
        )
      }
    }
    await Promise.all(inFlight)
    // endedAt: when the last was due to leave (performance.now()).
    return { latencies, lags, statuses, seconds: (performance.now() - t0) / 1000, endedAt: t0 + ((deliveries.length - 1) * 1000) / rate }
  } finally {
    await pool.close()
  }
}

/**
 * Polls every account's mirror until `expected` bench deliveries are settled (applied or kept with
 * an error) or `timeoutMs` passes; seconds from `since` (performance.now()).
 */
export async function appliedAfter(
  mirrors: Mirrors,
  accounts: readonly { id: string }[],
  expected: number,
  since: number,
  timeoutMs: number,
): Promise<{ settled: number; seconds: number }> {
  const count = (): number => {
    let n = 0
    for (const a of accounts) {
      try {
        const db = mirrors.get(a.id)
        n += (db
          ?.prepare(
            `SELECT count(*) FROM webhook_inbox WHERE delivery_id LIKE 'bench-many-%' AND (processed_at IS NOT NULL OR error IS NOT NULL)`,
          )
          .pluck()
          .get() ?? 0) as number
      } catch {
        // A mirror being parked or checkpointed: counted at the next poll.
      }
    }
    return n
  }
  let settled = count()
  let toldAt = performance.now()
  while (settled < expected && performance.now() - since < timeoutMs) {
    await new Promise((r) => setTimeout(r, 1_000))
    settled = count()
    if (performance.now() - toldAt >= 30_000) {
      toldAt = performance.now()
      process.stdout.write(`  webhooks: ${settled} of ${expected} applied after ${Math.round((toldAt - since) / 1000)} s\n`)
    }
  }
  return { settled, seconds: (performance.now() - since) / 1000 }
}

/** Runs `fn` over `items`, `concurrency` at a time. */
export async function eachLimited<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i]!)
    }),
  )
}

/** A control API call on one account; the answer's `data`. */
export async function control<T>(controlUrl: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${controlUrl}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  const doc = (await res.json()) as { success?: boolean; data?: unknown }
  if (res.status >= 300) throw new Error(`control ${method} ${path} answered ${res.status}: ${JSON.stringify(doc).slice(0, 300)}`)
  return doc.data as T
}
