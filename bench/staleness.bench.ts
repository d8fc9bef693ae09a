// Staleness of web-app changes (no webhook): `fsm-sync run` in a child process with its defaults
// (continuous sweeping, 0.85 of the budget) at 60 requests/minute against the emulator, which
// enforces the same 60 per sliding minute. 4 record streams and 2 custom objects; one web-app
// write a second (the control API's `mutate`: no webhook), skewed toward jobs and visits. Each
// change's staleness is the time from the emulator's write (the record's `updatedAt`) to the moment
// this process, polling the mirror file on its own connection, sees the row. The budget is judged
// from the emulator's request log (arrival times of every request of the key): the most starts in
// any 60 s window, and the most starts of sweeps (list reads of the swept streams).
//
// Then the account goes idle: after the streams' rests have grown to the bound, every request of
// the key is counted over a few minutes (the sweeps, their discoveries, and the hourly reference
// data should its minute fall in; the other schedules are off here), and one web-app change after
// that stretch is timed to the mirror. The idle hour at every default: idle-hour.bench.ts.
//
// Today's figure before continuous sweeping (a sweep every 5 minutes by cron) is computed, not run
// (a run long enough to mean something takes more than 10 minutes): a change waits for the next
// tick, uniformly 0-300 s, plus the batch's time to reach its stream, which is taken from this
// run's measured sweep durations.
import type { ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Database from 'better-sqlite3'
import { startEmulator } from '../emulator/index.js'
import { cleanEnv, spawnCli } from '../test/support/run-cli.js'
import { freePort } from '../test/support/free-port.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { seededRandom } from '../test/support/seeded-random.js'
import { atLeast, atMost, maxInWindow, type BenchResult } from './lib.js'

const RATE_LIMIT = 60
const CHANGES_SECONDS = 240
const DRAIN_SECONDS = 45
/** Idle: time for the rests to grow to the bound (1 + 2 + ... + 32 s, and a round), then the count. */
const IDLE_SETTLE_SECONDS = 90
const IDLE_SECONDS = 240
const POLL_MS = 100
/** Where the web-app writes go: jobs and visits take most. */
const MIX: readonly [resource: string, table: string, slug: string | null, weight: number][] = [
  ['jobs', 'jobs', null, 0.35],
  ['visits', 'visits', null, 0.35],
  ['clients', 'clients', null, 0.1],
  ['invoices', 'invoices', null, 0.1],
  ['objects/equipment', 'custom_records', 'equipment', 0.05],
  ['objects/inspections', 'custom_records', 'inspections', 0.05],
]
const SWEPT_ROUTES = /^\/api\/v1\/(clients|jobs|visits|invoices|objects\/(equipment|inspections))$/

interface Change {
  resource: string
  table: string
  slug: string | null
  id: string
  writtenAt: number
  updatedAt: string
  seenAt?: number
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

const round1 = (x: number) => Math.round(x * 10) / 10

export default async function (): Promise<BenchResult> {
  const emu = await startEmulator({ seed: 11, rateLimit: RATE_LIMIT })
  const control = async (method: 'GET' | 'POST', p: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${emu.url}/__emulator${p}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    })
    const json = (await res.json()) as { success?: boolean; data?: unknown }
    return json.success === true && 'data' in json ? json.data : json
  }
  const dir = tempDir('fsm-bench-staleness-')
  const db = path.join(dir, 'mirror.db')
  const config = path.join(dir, 'config.json')
  const never = '0 0 1 1 *'
  // Only what this bench measures runs: the default continuous sweeps (and reference data read once at start).
  writeFileSync(
    config,
    JSON.stringify({
      schedules: { reconcile: never, calendarA: never, calendarB: never, accounting: never, deliveries: never, retention: never },
    }),
  )
  const port = await freePort()
  const child: ChildProcess = spawnCli(
    ['run'],
    cleanEnv({
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_DB: db,
      FSM_RATE_LIMIT: String(RATE_LIMIT),
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: String(port),
      FSM_CONFIG: config,
    }),
  )
  let output = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d))
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  try {
    // The first pass (the backfill of every stream) before any change is timed.
    const streams = ['clients', 'jobs', 'visits', 'invoices', 'objects:equipment', 'objects:inspections']
    let mirror: Database.Database | undefined
    for (let i = 0; ; i++) {
      if (i > 1200) throw new Error(`no first pass within 120 s:\n${output}`)
      await sleep(100)
      try {
        mirror ??= new Database(db, { readonly: true, fileMustExist: true })
        const swept = new Set(
          (
            mirror.prepare(`SELECT DISTINCT stream FROM sync_runs WHERE kind = 'sweep' AND outcome = 'success'`).all() as {
              stream: string
            }[]
          ).map((r) => r.stream),
        )
        if (streams.every((s) => swept.has(s))) break
      } catch {
        // The daemon has not created the mirror yet.
      }
    }
    if (mirror === undefined) throw new Error('no mirror')
    const startedAt = Date.now()
    const lookup = {
      records: new Map(
        MIX.filter(([, table]) => table !== 'custom_records').map(([, table]) => [
          table,
          mirror.prepare(`SELECT updated_at FROM "${table}" WHERE id = ?`).pluck(),
        ]),
      ),
      objects: mirror.prepare(`SELECT updated_at FROM custom_records WHERE slug = ? AND id = ?`).pluck(),
    }
    const random = seededRandom(5)
    const changes: Change[] = []
    const pending = new Set<Change>()
    let stopPolling = false
    const poller = (async () => {
      while (!stopPolling) {
        const now = Date.now()
        for (const c of pending) {
          const stored = (c.slug === null ? lookup.records.get(c.table)!.get(c.id) : lookup.objects.get(c.slug, c.id)) as string | undefined
          if (stored !== undefined && stored >= c.updatedAt) {
            c.seenAt = now
            pending.delete(c)
          }
        }
        await sleep(POLL_MS)
      }
    })()
    const write = async (pick: (typeof MIX)[number], s: number): Promise<Change | undefined> => {
      const [resource, table, slug] = pick
      const fields = slug === null ? { notes: `web app ${s}` } : {}
      const [doc] = (await control('POST', '/mutate', { resource, op: 'update', count: 1, emit: false, fields })) as {
        id: string
        updatedAt: string
      }[]
      if (doc === undefined) return undefined
      const change: Change = { resource, table, slug, id: doc.id, writtenAt: Date.parse(doc.updatedAt), updatedAt: doc.updatedAt }
      pending.add(change)
      return change
    }
    for (let s = 0; s < CHANGES_SECONDS; s++) {
      const due = startedAt + s * 1000
      await sleep(Math.max(0, due - Date.now()))
      let r = random() * MIX.reduce((sum, m) => sum + m[3], 0)
      const change = await write(MIX.find((m) => (r -= m[3]) < 0) ?? MIX[0]!, s)
      if (change !== undefined) changes.push(change)
    }
    for (let i = 0; i < DRAIN_SECONDS * 10 && pending.size > 0; i++) await sleep(100)
    const changesEndedAt = Date.now()
    // Idle: no change at all; the rests grow to the bound, then every request is counted.
    await sleep(IDLE_SETTLE_SECONDS * 1000)
    const idleFrom = Date.now()
    await sleep(IDLE_SECONDS * 1000)
    const idleTo = Date.now()
    // The first change after the idle stretch (a visit, no webhook): the time until it is in the mirror.
    const wake = await write(MIX[1]!, -1)
    for (let i = 0; i < 900 && wake !== undefined && wake.seenAt === undefined; i++) await sleep(100)
    stopPolling = true
    await poller
    const loadAverage = os.loadavg().map((x) => x.toFixed(2))
    // The budget: every request of the key, by arrival at the emulator.
    const log: { startedAt: number | string; path: string; status: number; method: string }[] = []
    for (let after = 0; ;) {
      const page = (await control('GET', `/requests?after=${after}`)) as {
        seq: number
        startedAt: number | string
        path: string
        status: number
        method: string
      }[]
      const rows = Array.isArray(page) ? page : ((page as { requests?: typeof page }).requests ?? [])
      if (rows.length === 0) break
      log.push(...rows)
      after = rows.at(-1)!.seq
    }
    const at = (r: (typeof log)[number]) => (typeof r.startedAt === 'number' ? r.startedAt : Date.parse(r.startedAt))
    // The daemon's requests only (the control API this bench calls is logged too).
    const measured = log.filter((r) => r.path.startsWith('/api/') && at(r) >= startedAt && at(r) < changesEndedAt)
    const idle = log.filter((r) => r.path.startsWith('/api/') && at(r) >= idleFrom && at(r) < idleTo)
    const idlePerMinute = round1(idle.length / ((idleTo - idleFrom) / 60_000))
    const idleMost60 = maxInWindow(
      idle.map((r) => at(r)),
      60_000,
    )
    const wakeSeconds = wake?.seenAt === undefined ? Number.NaN : round1((wake.seenAt - wake.writtenAt) / 1000)
    const all60 = maxInWindow(
      measured.map((r) => at(r)),
      60_000,
    )
    const sweeps60 = maxInWindow(
      measured.filter((r) => SWEPT_ROUTES.test(r.path.split('?')[0] ?? '')).map((r) => at(r)),
      60_000,
    )
    const limited = log.filter((r) => r.path.startsWith('/api/') && r.status === 429).length
    const seen = changes.filter((c) => c.seenAt !== undefined)
    const staleness = seen.map((c) => (c.seenAt! - c.writtenAt) / 1000).sort((a, b) => a - b)
    const p50 = round1(quantile(staleness, 0.5))
    const p99 = round1(quantile(staleness, 0.99))
    const byStream = Object.fromEntries(
      MIX.map(([resource]) => {
        const xs = seen
          .filter((c) => c.resource === resource)
          .map((c) => (c.seenAt! - c.writtenAt) / 1000)
          .sort((a, b) => a - b)
        return [resource, { changes: xs.length, p50: round1(quantile(xs, 0.5)), max: round1(xs.at(-1) ?? Number.NaN) }]
      }),
    )
    // Today's figure, computed: a 5-minute cron sweep of the six streams in registry order, each
    // taking its measured mean duration (one after the other, paced as now).
    const durations = mirror
      .prepare(
        `SELECT stream, avg((julianday(ended_at) - julianday(started_at)) * 86400) AS seconds FROM sync_runs
         WHERE kind = 'sweep' AND outcome = 'success' AND started_at >= ? AND started_at < ? GROUP BY stream`,
      )
      .all(new Date(startedAt).toISOString(), new Date(changesEndedAt).toISOString()) as { stream: string; seconds: number }[]
    const batch = durations.reduce((sum, d) => sum + d.seconds, 0)
    const cronP50 = round1(150 + batch / 2)
    const cronP99 = round1(0.99 * 300 + batch)
    mirror.close()
    const unusedShare = round1((1 - sweeps60 / RATE_LIMIT) * 100)
    return {
      name: 'staleness',
      topic: 'freshness',
      figures: [
        {
          metric: 'staleness p50 of web-app changes (no webhook)',
          value: p50,
          unit: 's',
          ...atMost(p50, 10),
          baseline: `cron */5: ${cronP50} s (computed)`,
        },
        {
          metric: 'staleness p99 of web-app changes (no webhook)',
          value: p99,
          unit: 's',
          ...atMost(p99, 10),
          baseline: `cron */5: ${cronP99} s (computed)`,
        },
        {
          metric: 'changes not in the mirror at the end',
          value: changes.length - seen.length,
          unit: 'changes',
          ...atMost(changes.length - seen.length, 0),
        },
        {
          metric: 'most requests started in any 60 s window (all of the key)',
          value: all60,
          unit: 'requests',
          ...atMost(all60, RATE_LIMIT),
        },
        { metric: 'budget unused by sweeps in the busiest 60 s window', value: unusedShare, unit: '%', ...atLeast(unusedShare, 15) },
        { metric: '429 answers', value: limited, unit: 'answers', ...atMost(limited, 0) },
        {
          metric: `requests per minute of an idle account (every request of the key, ${IDLE_SECONDS / 60} min, real time)`,
          value: idlePerMinute,
          unit: 'requests',
          ...atMost(idlePerMinute, 10),
          baseline: 'before the back-off: 51 (the whole share)',
        },
        {
          metric: 'most requests of an idle account in any 60 s window',
          value: idleMost60,
          unit: 'requests',
          goal: '',
        },
        {
          metric: `staleness of the first web-app change after ${Math.round((IDLE_SETTLE_SECONDS + IDLE_SECONDS) / 60)} idle minutes (real time)`,
          value: wakeSeconds,
          unit: 's',
          ...atMost(wakeSeconds, 60),
        },
      ],
      notes: [
        `${changes.length} web-app writes at 1/s over ${CHANGES_SECONDS} s (jobs 35 %, visits 35 %, clients, invoices 10 % each, two custom objects 5 % each), FSM_RATE_LIMIT=${RATE_LIMIT} enforced by the emulator too, sync.budgetShare 0.85, sync.maxSweepIntervalSeconds 60; staleness from the emulator's write to the row seen by another process polling the mirror every ${POLL_MS} ms.`,
        `Per resource (changes, p50 s, max s): ${JSON.stringify(byStream)}.`,
        `Most sweep requests in any 60 s window of the change phase: ${sweeps60} of ${RATE_LIMIT}.`,
        `Idle phase: no change for ${IDLE_SETTLE_SECONDS + IDLE_SECONDS} s after the last change was seen; requests counted over the last ${IDLE_SECONDS} s (${idle.length} requests). The idle hour and the first change after it, on the FakeClock: bench/results/idle-hour.json.`,
        `Load average of the machine (shared with other engineers' work) at the end: ${loadAverage.join(', ')}.`,
        `The cron baseline is computed, not run: a change waits for the next 5-minute tick (uniform over 0-300 s) and for the batch to reach its stream; the batch of six sweeps took ${round1(batch)} s at the measured mean durations.`,
      ],
    }
  } finally {
    child.kill('SIGTERM')
    await exited
    await emu.close()
  }
}
