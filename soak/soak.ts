// The soak (README.md, Soak): the daemon under churn, faults, a 429 storm and random SIGKILLs, with
// an external reader on its mirror; then one sweep and one reconcile and an exact comparison with
// the emulator. Used by `npm run soak` (soak/run.ts) and, shorter, by test/soak/soak.test.ts.
import { statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { maxInWindow } from '../bench/lib.js'
import { freePort } from '../test/support/free-port.js'
import { withoutFsmSettings } from '../test/support/run-cli.js'
import { seededRandom } from '../test/support/seeded-random.js'
import { compareMirror, countBy, type Comparison, type Mismatch, type Rows } from '../test/support/compare-mirror.js'
import { peakRss, startCli, startEmulatorChild, startReader, stop, type Child } from './processes.js'
import { STORM_AGENT, startStorm, type StormCounts } from './storm.js'
import { tempDir } from '../test/support/temp-mirror.js'

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

interface Segment {
  kind: 'register' | 'daemon' | 'sync' | 'reconcile'
  start: number
  pid: number
}

interface LoggedRequest {
  seq: number
  startedAt: string
  userAgent: string | null
  method: string
  path: string
  status: number
}

export interface SoakReport {
  seed: number
  durationMs: number
  budget: number
  churnPerSecond: number
  dir: string
  kills: number
  unexpectedExits: string[]
  churn: { done: number; errors: number }
  compared: Record<string, number>
  /** After churn stopped and the daemon alone swept and reconciled once more (cycleDone false: it did not within 3 min). */
  beforeFinalPass: { missing: number; stale: number; phantom: number; cycleDone: boolean }
  missing: number
  stale: number
  phantom: number
  /** The first mismatches after the final pass (all of them when few). */
  mismatches: Mismatch[]
  finalSync: number | null
  finalReconcile: number | null
  deliveries: { total: number; acked: number; notAcked: number; ackedLost: string[] }
  /** Inbox rows kept with a processing error, counted by error message. */
  inbox: { rows: number; errors: Record<string, number> }
  requests: {
    ours: number
    ours429: number
    ours5xxOrReset: number
    /** Most starts of one of our processes in any 60 s window (the contract's guarantee 4). */
    maxWindowOneProcess: number
    /** Most starts of the daemon in any 60 s window, killed and restarted instances together. */
    maxWindowAcrossProcesses: number
    storm: StormCounts
    logComplete: boolean
  }
  reader: { queries: number; errors: Record<string, number>; firstError: string | null }
  peakRssBytes: number
  peakWalBytes: number
  secretInOutput: boolean
}

const HARNESS_AGENT = 'soak-harness'
const NEVER = '0 0 1 1 *'

async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, limitMs: number): Promise<T> {
  const end = Date.now() + limitMs
  for (;;) {
    const v = await probe()
    if (v !== undefined && v !== false) return v
    if (Date.now() > end) throw new Error(`soak: gave up waiting for ${what} after ${limitMs / 1000} s`)
    await delay(200)
  }
}

/** Read-only look at the mirror through a short-lived connection ([] while a table is missing). */
function mirrorRows(db: string): Rows {
  return (sql, ...params) => {
    const conn = new Database(db, { readonly: true, fileMustExist: true })
    try {
      return conn.prepare(sql).all(...params) as Record<string, unknown>[]
    } finally {
      conn.close()
    }
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const seed = options.seed ?? 1
  const budget = options.budget ?? 60
  const churnPerSecond = options.churnPerSecond ?? 2
  const D = options.durationMs
  const [killMin, killMax] = options.killEveryMs ?? [Math.max(8_000, D / 30), Math.max(15_000, D / 10)]
  const say = options.log ?? (() => undefined)
  const random = seededRandom(seed)
  const between = (lo: number, hi: number) => lo + random() * (hi - lo)

  const dir = tempDir('fsm-soak-')
  const db = path.join(dir, 'mirror.db')
  const daemonLog = path.join(dir, 'daemon.log')
  const emu = await startEmulatorChild({
    seed, rateLimit: budget, allowHttpWebhooks: true,
    counts: { clients: 60, jobs: 60, visitsPerJob: 2, invoices: 40, customRecords: 20 },
  })
  say(`emulator ${emu.url}, work folder ${dir}`)
  const children: Child[] = [emu]
  let daemon: Child | undefined
  let reader: Child | undefined
  let storm: ReturnType<typeof startStorm> | undefined
  try {
    const call = async (method: 'GET' | 'POST', p: string, body?: unknown, apiKey = false): Promise<{ status: number; body: any }> => {
      const res = await request(`${emu.url}${p}`, {
        method,
        headers: { 'user-agent': HARNESS_AGENT, ...(apiKey ? { 'x-api-key': emu.apiKey } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      const text = await res.body.text()
      return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) }
    }
    const control = async (method: 'GET' | 'POST', p: string, body?: unknown): Promise<any> => {
      const r = await call(method, `/__emulator${p}`, body)
      if (r.status >= 300) throw new Error(`soak: control ${method} ${p} answered ${r.status}: ${JSON.stringify(r.body)}`)
      return r.body?.data
    }
    const state = async (resource: string) => (await control('GET', `/state/${resource}`)) as Record<string, unknown>[]

    // The custom objects the daemon discovers (they do not change during the soak).
    const objects = await call('GET', '/api/v1/objects', undefined, true)
    if (objects.status !== 200) throw new Error(`soak: GET /api/v1/objects answered ${objects.status}`)
    const slugs = (objects.body.data as { slug: string }[]).map((o) => o.slug)

    // A fixed port across restarts: the registered webhook URL must stay valid.
    const port = await freePort()
    const configFile = path.join(dir, 'config.json')
    writeFileSync(configFile, JSON.stringify({
      schedules: {
        sweep: '*/15 * * * * *', reconcile: '5,35 * * * * *', deliveries: '10,30,50 * * * * *', reference: '0 */5 * * * *',
        calendarA: NEVER, calendarB: NEVER, accounting: NEVER,
      },
    }))
    const env = withoutFsmSettings({
      FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: String(budget), FSM_LOG_LEVEL: 'warn',
      FSM_HTTP_HOST: '127.0.0.1', FSM_HTTP_PORT: String(port), FSM_CONFIG: configFile,
    })
    const segments: Segment[] = []
    const outputs: string[] = []
    const oneShot = async (kind: Segment['kind'], args: string[]): Promise<number | null> => {
      const c = startCli(args, env, daemonLog)
      segments.push({ kind, start: Date.now(), pid: c.pid })
      const { code } = await c.exited
      outputs.push(c.output())
      if (code !== 0) say(`${args.join(' ')} exited ${String(code)}:\n${c.output()}`)
      return code
    }
    const reg = await oneShot('register', ['webhooks', 'register', '--url', `http://127.0.0.1:${port}/webhooks`])
    if (reg !== 0) throw new Error(`soak: fsm-sync webhooks register failed (exit ${String(reg)}); see ${daemonLog}`)

    const unexpectedExits: string[] = []
    const startDaemon = (): Child => {
      const c = startCli(['run'], env, daemonLog)
      segments.push({ kind: 'daemon', start: Date.now(), pid: c.pid })
      children.push(c)
      void c.exited.then(({ code, signal }) => {
        outputs.push(c.output())
        if (signal !== 'SIGKILL' && !(signal === null && code === 0)) unexpectedExits.push(`pid ${c.pid} exited code ${String(code)} signal ${String(signal)}: ${c.output().slice(-800)}`)
      })
      return c
    }
    const ready = () => until('the daemon /readyz to answer 200', async () => {
      try {
        const res = await request(`http://127.0.0.1:${port}/readyz`)
        await res.body.dump()
        return res.statusCode === 200
      } catch {
        return false
      }
    }, 120_000)

    // Figures sampled all along: the daemon's peak RSS and the WAL's size.
    let peakRssBytes = 0
    let peakWalBytes = 0
    const sample = (): void => {
      if (daemon !== undefined) peakRssBytes = Math.max(peakRssBytes, peakRss(daemon.pid) ?? 0)
      try {
        peakWalBytes = Math.max(peakWalBytes, statSync(`${db}-wal`).size)
      } catch {
        // No WAL file at this instant (checkpointed and truncated, or not created yet).
      }
    }
    const sampler = setInterval(sample, 500)

    // The request log, read as we go so that its bound never drops an entry.
    const log: LoggedRequest[] = []
    let logComplete = true
    const readLog = async (): Promise<void> => {
      const after = log.at(-1)?.seq ?? 0
      const got = (await control('GET', `/requests?after=${after}`)) as LoggedRequest[]
      if (got.length > 0 && got[0]!.seq !== after + 1) logComplete = false
      log.push(...got)
    }

    try {
      daemon = startDaemon()
      await ready()
      say('daemon ready; churn, faults and the reader start')
      reader = startReader(db)
      children.push(reader)
      await control('POST', '/churn', { ratePerSecond: churnPerSecond })
      await control('POST', '/faults', { route: '*', status5xxShare: 0.05, latencyMs: 20, resetShare: 0.02 })

      const t0 = Date.now()
      const stormAt = t0 + 0.35 * D
      const stormEnd = stormAt + Math.min(60_000, 0.2 * D)
      const force429At = t0 + 0.7 * D
      const appWritesAt = t0 + 0.5 * D
      let appWrites = false
      let stormCounts: StormCounts = { requests: 0, limited: 0, failed: 0 }
      let forced = false
      let kills = 0
      let nextKill = t0 + between(killMin, killMax)
      let lastRead = Date.now()
      while (Date.now() < t0 + D) {
        const now = Date.now()
        if (daemon !== undefined && daemon.child.exitCode !== null) {
          // It died on its own (already recorded as unexpected): bring it back like a supervisor would.
          daemon = startDaemon()
        }
        if (daemon !== undefined && now >= nextKill) {
          const d = daemon
          daemon = undefined
          sample()
          d.child.kill('SIGKILL')
          await d.exited
          kills++
          const pause = between(300, 3_000)
          say(`SIGKILL #${kills} at +${Math.round((now - t0) / 1000)} s; restart in ${Math.round(pause)} ms`)
          await delay(pause)
          daemon = startDaemon()
          nextKill = Date.now() + between(killMin, killMax)
        }
        if (storm === undefined && now >= stormAt && now < stormEnd) {
          say('429 storm from another client on the same key')
          storm = startStorm(emu.url, emu.apiKey, 20)
        }
        if (storm !== undefined && now >= stormEnd) {
          stormCounts = await storm.stop()
          storm = undefined
        }
        if (!appWrites && now >= appWritesAt) {
          // Web-app edits made by hand, beside the churn: a deletion in every custom object (the
          // app is the only place they can be deleted; each emits object.deleted with only {id}).
          appWrites = true
          for (const slug of slugs) await control('POST', '/mutate', { resource: `objects/${slug}`, op: 'delete', count: 1 })
          await control('POST', '/mutate', { resource: 'invoices', op: 'delete', count: 1 })
          await control('POST', '/mutate', { resource: 'visits', op: 'update', count: 3 })
        }
        if (!forced && now >= force429At) {
          forced = true
          await control('POST', '/faults', { route: 'GET /api/v1/*', force429: { count: 3, retryAfterSeconds: 4 } })
        }
        if (now - lastRead > 5_000) {
          await readLog()
          lastRead = now
        }
        await delay(200)
      }
      if (storm !== undefined) stormCounts = await storm.stop()
      storm = undefined

      // The end: churn and faults stop; the daemon (running) takes the last deliveries, then stops.
      say('churn and faults stop; draining')
      const churn = (await control('GET', '/churn')) as { done: number; errors: number }
      await control('POST', '/churn', { stop: true })
      await control('POST', '/faults', { clear: true })
      daemon ??= startDaemon()
      await ready()
      await control('POST', '/deliveries/flush')
      const rows = mirrorRows(db)
      await until('the webhook inbox to be processed', () => rows(`SELECT count(*) AS n FROM webhook_inbox WHERE processed_at IS NULL AND error IS NULL`)[0]?.n === 0, 120_000)
      // Then the daemon alone, one more sweep and reconciliation of every stream (a guarded
      // reconciliation counts as done), so that "before the final pass" shows what it recovers itself.
      const mark = Number(rows(`SELECT coalesce(max(id), 0) AS id FROM sync_runs`)[0]?.id ?? 0)
      const streams = ['clients', 'jobs', 'visits', 'invoices', ...slugs.map((s) => `objects:${s}`)]
      const done = (kind: string, outcomes: string) =>
        new Set(rows(`SELECT stream FROM sync_runs WHERE id > ? AND kind = ? AND outcome IN (${outcomes})`, mark, kind).map((r) => String(r.stream)))
      let daemonCycle = true
      try {
        await until('a sweep and a reconciliation of every stream by the daemon', () => {
          const swept = done('sweep', `'success'`)
          const reconciled = done('reconcile', `'success', 'guarded'`)
          return streams.every((s) => swept.has(s) && reconciled.has(s))
        }, 180_000)
      } catch {
        daemonCycle = false
      }
      const d = daemon
      daemon = undefined
      sample()
      const stopped = await stop(d, 'SIGTERM', 30_000)
      if (stopped.forced) unexpectedExits.push(`pid ${d.pid} did not stop within 30 s of SIGTERM`)
      const before = await compareMirror(state, rows, slugs)

      say('one sweep and one reconcile')
      const finalSync = await oneShot('sync', ['sync'])
      const finalReconcile = await oneShot('reconcile', ['reconcile'])
      const after: Comparison = await compareMirror(state, rows, slugs)

      // No acknowledged delivery lost: every delivery answered 200 is in the inbox.
      const deliveries = await state('deliveries')
      const inboxIds = new Set(rows(`SELECT delivery_id FROM webhook_inbox`).map((r) => String(r.delivery_id)))
      const acked = deliveries.filter((x) => x.status === 'success' && x.responseCode === 200)
      const inboxErrors: Record<string, number> = {}
      for (const e of rows(`SELECT event, error, count(*) AS n FROM webhook_inbox WHERE error IS NOT NULL GROUP BY 1, 2`)) {
        inboxErrors[`${String(e.event)}: ${String(e.error)}`] = Number(e.n)
      }

      clearInterval(sampler)
      await readLog()
      const requests = budgetFigures(log, segments, stormCounts, logComplete)

      const r = reader
      reader = undefined
      await stop(r, 'SIGTERM')
      const readerOut = r.output().trim().split('\n').at(-1) ?? ''
      let readerFigures: SoakReport['reader']
      try {
        readerFigures = JSON.parse(readerOut) as SoakReport['reader']
      } catch {
        readerFigures = { queries: 0, errors: { NO_REPORT: 1 }, firstError: `the reader printed no report: ${r.output().slice(-500)}` }
      }

      return {
        seed, durationMs: D, budget, churnPerSecond, dir, kills, unexpectedExits,
        churn: { done: churn.done, errors: churn.errors },
        compared: after.compared,
        beforeFinalPass: { missing: countBy(before.mismatches, 'missing'), stale: countBy(before.mismatches, 'stale'), phantom: countBy(before.mismatches, 'phantom'), cycleDone: daemonCycle },
        missing: countBy(after.mismatches, 'missing'),
        stale: countBy(after.mismatches, 'stale'),
        phantom: countBy(after.mismatches, 'phantom'),
        mismatches: after.mismatches.slice(0, 20),
        finalSync, finalReconcile,
        deliveries: {
          total: deliveries.length,
          acked: acked.length,
          notAcked: deliveries.length - acked.length,
          ackedLost: acked.map((x) => String(x.id)).filter((id) => !inboxIds.has(id)),
        },
        inbox: { rows: inboxIds.size, errors: inboxErrors },
        requests,
        reader: readerFigures,
        peakRssBytes, peakWalBytes,
        secretInOutput: outputs.some((o) => o.includes(emu.apiKey)),
      }
    } finally {
      clearInterval(sampler)
    }
  } finally {
    if (storm !== undefined) await storm.stop()
    for (const c of children.reverse()) await stop(c, c === daemon || c === reader ? 'SIGKILL' : 'SIGTERM', 10_000)
  }
}

/** Our requests (not the storm's, not the harness's) and the most of them in any 60 s window. */
function budgetFigures(log: readonly LoggedRequest[], segments: readonly Segment[], storm: StormCounts, logComplete: boolean): SoakReport['requests'] {
  const ours = log.filter((e) => e.userAgent !== STORM_AGENT && e.userAgent !== HARNESS_AGENT)
  const sorted = [...segments].sort((a, b) => a.start - b.start)
  const byProcess = new Map<number, number[]>()
  // Every process of ours in turn (the daemon across its restarts, then the final sync and
  // reconcile): they share the key and the mirror, so together they must keep the budget.
  const daemonStarts: number[] = []
  for (const e of ours) {
    const t = Date.parse(e.startedAt)
    // A request belongs to the last of our processes started before it arrived (they never overlap).
    const seg = sorted.filter((s) => s.start <= t).at(-1) ?? sorted[0]
    if (seg === undefined) continue
    const list = byProcess.get(seg.pid) ?? []
    list.push(t)
    byProcess.set(seg.pid, list)
    daemonStarts.push(t)
  }
  return {
    ours: ours.length,
    ours429: ours.filter((e) => e.status === 429).length,
    ours5xxOrReset: ours.filter((e) => e.status === 0 || e.status >= 500).length,
    maxWindowOneProcess: Math.max(0, ...[...byProcess.values()].map((times) => maxInWindow(times, 60_000))),
    maxWindowAcrossProcesses: maxInWindow(daemonStarts, 60_000),
    storm,
    logComplete,
  }
}

