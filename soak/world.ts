// What the soak's phases share (soak.ts): the emulator and our processes, the mirror's folder, the
// daemon's fixed port and environment, and the figures gathered while they run; with the small
// operations every phase uses on them (a control call, a one-shot command, a daemon (re)start).
import { statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { request } from 'undici'
import type { Rows } from '../test/support/compare-mirror.js'
import { freePort } from '../test/support/free-port.js'
import { withoutFsmSettings } from '../test/support/run-cli.js'
import { seededRandom } from '../test/support/seeded-random.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { peakRss, startCli, startEmulatorChild, stop, type Child, type EmulatorChild } from './processes.js'
import type { startStorm } from './storm.js'

export const HARNESS_AGENT = 'soak-harness'
const NEVER = '0 0 1 1 *'

export interface SoakOptions {
  durationMs: number
  seed?: number
  /** FSM_RATE_LIMIT of our processes, and the emulator's limit for the key. */
  budget?: number
  /** Background writes per second (creates, updates, deletes; half through the API). */
  churnPerSecond?: number
  /** Range of the random time between a (re)start of the daemon and its next SIGKILL. */
  killEveryMs?: [number, number]
  /** Progress lines (default: none). */
  log?: (line: string) => void
}

export interface Segment {
  kind: 'register' | 'daemon' | 'sync' | 'reconcile'
  start: number
  pid: number
}

export interface LoggedRequest {
  seq: number
  startedAt: string
  userAgent: string | null
  method: string
  path: string
  status: number
}

export interface World {
  readonly seed: number
  readonly budget: number
  readonly churnPerSecond: number
  readonly durationMs: number
  readonly killEveryMs: readonly [number, number]
  readonly say: (line: string) => void
  /** A seeded draw in [lo, hi): the same seed replays the same kill times and pauses. */
  readonly between: (lo: number, hi: number) => number
  readonly dir: string
  readonly db: string
  readonly daemonLog: string
  readonly emu: EmulatorChild
  /** The custom objects the daemon discovers (they do not change during the soak). */
  readonly slugs: readonly string[]
  /** A fixed port across restarts: the registered webhook URL must stay valid. */
  readonly port: number
  readonly env: Record<string, string>
  /** Every process started, for the teardown (the emulator first). */
  readonly children: Child[]
  daemon: Child | undefined
  reader: Child | undefined
  storm: ReturnType<typeof startStorm> | undefined
  /** Our processes in start order: the request log's entries are attributed to them. */
  readonly segments: Segment[]
  readonly outputs: string[]
  readonly unexpectedExits: string[]
  /** The emulator's request log, read as we go so that its bound never drops an entry. */
  readonly log: LoggedRequest[]
  logComplete: boolean
  peakRssBytes: number
  peakWalBytes: number
  sampler: NodeJS.Timeout | undefined
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  limitMs: number,
): Promise<T> {
  const end = Date.now() + limitMs
  for (;;) {
    const v = await probe()
    if (v !== undefined && v !== false) return v
    if (Date.now() > end) throw new Error(`soak: gave up waiting for ${what} after ${limitMs / 1000} s`)
    await delay(200)
  }
}

/** Read-only look at the mirror through a short-lived connection ([] while a table is missing). */
export function mirrorRows(db: string): Rows {
  return (sql, ...params) => {
    const conn = new Database(db, { readonly: true, fileMustExist: true })
    try {
      return conn.prepare(sql).all(...params) as Record<string, unknown>[]
    } finally {
      conn.close()
    }
  }
}

async function call(
  emu: EmulatorChild,
  method: 'GET' | 'POST',
  p: string,
  body?: unknown,
  apiKey = false,
): Promise<{ status: number; body: any }> {
  const res = await request(`${emu.url}${p}`, {
    method,
    headers: {
      'user-agent': HARNESS_AGENT,
      ...(apiKey ? { 'x-api-key': emu.apiKey } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.body.text()
  return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) }
}

/** A call to the emulator's control API; its `data`. */
export async function control(w: World, method: 'GET' | 'POST', p: string, body?: unknown): Promise<any> {
  const r = await call(w.emu, method, `/__emulator${p}`, body)
  if (r.status >= 300) throw new Error(`soak: control ${method} ${p} answered ${r.status}: ${JSON.stringify(r.body)}`)
  return r.body?.data
}

/** The emulator's own records of `resource` (the truth the mirror is compared with). */
export const state = async (w: World, resource: string) => (await control(w, 'GET', `/state/${resource}`)) as Record<string, unknown>[]

/** The emulator, its custom objects, the daemon's fixed port and configuration. */
export async function startWorld(options: SoakOptions): Promise<World> {
  const seed = options.seed ?? 1
  const budget = options.budget ?? 60
  const D = options.durationMs
  const say = options.log ?? (() => undefined)
  const random = seededRandom(seed)
  const dir = tempDir('fsm-soak-')
  const db = path.join(dir, 'mirror.db')
  const emu = await startEmulatorChild({
    seed,
    rateLimit: budget,
    allowHttpWebhooks: true,
    counts: { clients: 60, jobs: 60, visitsPerJob: 2, invoices: 40, customRecords: 20 },
  })
  say(`emulator ${emu.url}, work folder ${dir}`)
  try {
    const objects = await call(emu, 'GET', '/api/v1/objects', undefined, true)
    if (objects.status !== 200) throw new Error(`soak: GET /api/v1/objects answered ${objects.status}`)
    const port = await freePort()
    const configFile = path.join(dir, 'config.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        schedules: {
          sweep: '*/15 * * * * *',
          reconcile: '5,35 * * * * *',
          deliveries: '10,30,50 * * * * *',
          reference: '0 */5 * * * *',
          calendarA: NEVER,
          calendarB: NEVER,
          accounting: NEVER,
        },
      }),
    )
    return {
      seed,
      budget,
      durationMs: D,
      say,
      dir,
      db,
      emu,
      port,
      churnPerSecond: options.churnPerSecond ?? 2,
      killEveryMs: options.killEveryMs ?? [Math.max(8_000, D / 30), Math.max(15_000, D / 10)],
      between: (lo, hi) => lo + random() * (hi - lo),
      daemonLog: path.join(dir, 'daemon.log'),
      slugs: (objects.body.data as { slug: string }[]).map((o) => o.slug),
      env: withoutFsmSettings({
        FSM_BASE_URL: emu.url,
        FSM_API_KEY: emu.apiKey,
        FSM_DB: db,
        FSM_RATE_LIMIT: String(budget),
        FSM_LOG_LEVEL: 'warn',
        FSM_HTTP_HOST: '127.0.0.1',
        FSM_HTTP_PORT: String(port),
        FSM_CONFIG: configFile,
      }),
      children: [emu],
      daemon: undefined,
      reader: undefined,
      storm: undefined,
      segments: [],
      outputs: [],
      unexpectedExits: [],
      log: [],
      logComplete: true,
      peakRssBytes: 0,
      peakWalBytes: 0,
      sampler: undefined,
    }
  } catch (err) {
    await stop(emu, 'SIGTERM', 10_000)
    throw err
  }
}

/** Stops whatever still runs: the storm, then our processes newest first (the emulator last). */
export async function tearDown(w: World): Promise<void> {
  clearInterval(w.sampler)
  if (w.storm !== undefined) await w.storm.stop()
  for (const c of w.children.reverse()) await stop(c, c === w.daemon || c === w.reader ? 'SIGKILL' : 'SIGTERM', 10_000)
}

/** A CLI command run to its end; its exit code. */
export async function oneShot(w: World, kind: Segment['kind'], args: string[]): Promise<number | null> {
  const c = startCli(args, w.env, w.daemonLog)
  w.segments.push({ kind, start: Date.now(), pid: c.pid })
  const { code } = await c.exited
  w.outputs.push(c.output())
  if (code !== 0) w.say(`${args.join(' ')} exited ${String(code)}:\n${c.output()}`)
  return code
}

/** `fsm-sync run`; any exit but a SIGKILL of ours or a clean stop is recorded as unexpected. */
export function startDaemon(w: World): Child {
  const c = startCli(['run'], w.env, w.daemonLog)
  w.segments.push({ kind: 'daemon', start: Date.now(), pid: c.pid })
  w.children.push(c)
  void c.exited.then(({ code, signal }) => {
    w.outputs.push(c.output())
    if (signal !== 'SIGKILL' && !(signal === null && code === 0))
      w.unexpectedExits.push(`pid ${c.pid} exited code ${String(code)} signal ${String(signal)}: ${c.output().slice(-800)}`)
  })
  return c
}

export const ready = (w: World) =>
  until(
    'the daemon /readyz to answer 200',
    async () => {
      try {
        const res = await request(`http://127.0.0.1:${w.port}/readyz`)
        await res.body.dump()
        return res.statusCode === 200
      } catch {
        return false
      }
    },
    120_000,
  )

/** The daemon's peak RSS and the WAL's peak size so far. */
export function sample(w: World): void {
  if (w.daemon !== undefined) w.peakRssBytes = Math.max(w.peakRssBytes, peakRss(w.daemon.pid) ?? 0)
  try {
    w.peakWalBytes = Math.max(w.peakWalBytes, statSync(`${w.db}-wal`).size)
  } catch {
    // No WAL file at this instant (checkpointed and truncated, or not created yet).
  }
}

/** The request log's entries since the last read (a gap in the sequence marks the log incomplete). */
export async function readLog(w: World): Promise<void> {
  const after = w.log.at(-1)?.seq ?? 0
  const got = (await control(w, 'GET', `/requests?after=${after}`)) as LoggedRequest[]
  if (got.length > 0 && got[0]!.seq !== after + 1) w.logComplete = false
  w.log.push(...got)
}
