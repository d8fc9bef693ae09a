// Request efficiency: what sweeps cost in requests against the minimum (docs/sweeping.md, What a sweep
// costs), counted by the emulator's request log. The minimum: per paged stream ceil(rows / 100),
// at least 1; per custom object its list pages (ceil(records / 100), at least 1); discovery once.
//
// 1. Emulator data with ties of 150 rows on one millisecond at the start, middle and end of every
//    paged stream, and a 120-row tie in a custom object: a backfill (list requests against the
//    minimum), an idle incremental sweep, and a sweep after k changed rows per stream.
// 2. Backfill of 20,000 records per paged stream: the requests against the minimum, and the time
//    the request governor needs for them at 60/min (method in the notes).
import path from 'node:path'
import { rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { request } from 'undici'
import { startEmulator, type EmulatorHandle } from '../emulator/index.js'
import { RECORD_STREAMS } from '../connectors/index.js'
import { loadConfig } from '../src/config/index.js'
import { createApp, type App } from '../src/daemon/create-app.js'
import { createLogger } from '../src/log/logger.js'
import { runSweeps } from '../src/sync/sync-engine.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { atMost, type BenchResult, type Figure } from './lib.js'

const PAGE = 100
const minimumPages = (rows: number) => Math.max(1, Math.ceil(rows / PAGE))

interface Logged {
  path: string
  query: string
}

async function control(emu: EmulatorHandle, method: 'GET' | 'POST', p: string, body?: unknown): Promise<any> {
  const res = await request(`${emu.url}/__emulator${p}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const parsed = (await res.body.json()) as { success: boolean; data?: unknown }
  if (res.statusCode >= 300) throw new Error(`control ${method} ${p}: ${res.statusCode} ${JSON.stringify(parsed)}`)
  return parsed.data
}

const live = async (emu: EmulatorHandle, resource: string) =>
  ((await control(emu, 'GET', `/state/${resource}`)) as { id: string; updatedAt: string; deleted: boolean }[]).filter((r) => !r.deleted)

/** Gives `ids` one updatedAt (`at`), as a web-app write stamped at that instant. */
async function stamp(emu: EmulatorHandle, resource: string, ids: readonly string[], at: string): Promise<void> {
  for (const id of ids) await control(emu, 'POST', '/mutate', { resource, op: 'update', id, fields: { updatedAt: at }, emit: false })
}

/** Ties of 150 on one millisecond at the start, middle and end of a stream's updatedAt order. */
async function tieStream(emu: EmulatorHandle, resource: string, size = 150): Promise<void> {
  const rows = (await live(emu, resource)).sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.id.localeCompare(b.id))
  const mid = Math.floor(rows.length / 2)
  const end = rows.slice(-size)
  await stamp(
    emu,
    resource,
    rows.slice(0, size).map((r) => r.id),
    rows[0]!.updatedAt,
  )
  await stamp(
    emu,
    resource,
    rows.slice(mid, mid + size).map((r) => r.id),
    rows[mid]!.updatedAt,
  )
  // The end: the last rows all at the newest time of the stream.
  await stamp(
    emu,
    resource,
    end.map((r) => r.id),
    end.at(-1)!.updatedAt,
  )
}

/** Moves the emulator's clock past the look-back, so what was written is settled for the next sweep. */
const settle = (emu: EmulatorHandle) => control(emu, 'POST', '/clock', { advanceMs: 10_000 })

async function openApp(emu: EmulatorHandle, dir: string): Promise<App> {
  const config = loadConfig({
    env: {
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_DB: path.join(dir, 'mirror.db'),
      FSM_RATE_LIMIT: '100000',
      FSM_LOG_LEVEL: 'warn',
    },
  })
  return createApp(config, { logger: createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) }) })
}

async function sweep(app: App, objects: 'all' | undefined = 'all') {
  const results = await runSweeps(app.syncContext(), { records: [...RECORD_STREAMS], reference: [], metadata: [], objects, notBuilt: [] })
  const failed = results.filter((r) => r.outcome !== 'success')
  if (failed.length > 0) throw new Error(`sweep failed: ${JSON.stringify(failed)}`)
  return results
}

/** The requests the emulator saw during `work`, by path. */
async function counted(emu: EmulatorHandle, work: () => Promise<unknown>): Promise<Map<string, number>> {
  await control(emu, 'POST', '/requests/clear')
  await work()
  const log = (await control(emu, 'GET', '/requests')) as Logged[]
  const byPath = new Map<string, number>()
  for (const r of log) if (r.path.startsWith('/api/')) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1)
  return byPath
}

const SLUGS = ['equipment', 'inspections']

async function tiedData(figures: Figure[], notes: string[]): Promise<void> {
  const counts = { clients: 10_000, jobs: 5000, visitsPerJob: 2, invoices: 10_000, customRecords: 1000 }
  const emu = await startEmulator({ seed: 5, counts, rateLimit: false })
  const dir = tempDir('fsm-requests-')
  try {
    // Visits first: a visit write may move its job (the status roll-up), which must not undo a job tie.
    for (const s of [...RECORD_STREAMS].sort((a, b) => Number(b.name === 'visits') - Number(a.name === 'visits')))
      await tieStream(emu, s.name)
    const equipment = (await live(emu, 'objects/equipment')).slice(0, 120)
    await stamp(
      emu,
      'objects/equipment',
      equipment.map((r) => r.id),
      equipment[0]!.updatedAt,
    )
    await settle(emu)
    const rows = new Map<string, number>()
    for (const s of RECORD_STREAMS) rows.set(s.route, (await live(emu, s.name)).length)
    for (const slug of SLUGS) rows.set(`/api/v1/objects/${slug}`, (await live(emu, `objects/${slug}`)).length)
    const app = await openApp(emu, dir)
    try {
      // Backfill: list requests against the minimum.
      const backfill = await counted(emu, () => sweep(app))
      let actual = 0
      let minimum = 0
      const perList: string[] = []
      for (const [route, n] of rows) {
        const used = backfill.get(route) ?? 0
        actual += used
        minimum += minimumPages(n)
        perList.push(`${route.replace('/api/v1/', '')} ${used}/${minimumPages(n)} (${n} rows)`)
      }
      const ratio = actual / minimum
      figures.push({
        metric: 'backfill with 150-row ties (start, middle, end of each stream) and a 120-row custom-object tie: list requests / minimum',
        value: Number(ratio.toFixed(4)),
        unit: 'ratio',
        ...atMost(ratio, 1.03),
        baseline: `${actual} requests, minimum ${minimum}`,
      })
      notes.push(
        `Tied data: ${JSON.stringify(counts)}; list requests used/minimum per list: ${perList.join(', ')}. Also discovery 1 and schemas ${[...backfill].filter(([p]) => p.endsWith('/schema')).length}.`,
      )
      // An idle incremental sweep.
      await settle(emu)
      const idle = await counted(emu, () => sweep(app))
      const idleTotal = [...idle.values()].reduce((a, b) => a + b, 0)
      const idleMinimum = RECORD_STREAMS.length + SLUGS.length + 1
      figures.push({
        metric:
          'idle incremental sweep (newest rows a 150-row tie at each cursor): requests / (1 per paged stream and per custom object + discovery)',
        value: idleTotal,
        unit: 'requests',
        ...atMost(idleTotal, idleMinimum),
        baseline: `minimum ${idleMinimum}; by path ${JSON.stringify(Object.fromEntries(idle))}`,
      })
      // A sweep after k changed rows per stream.
      const changed: Record<string, number> = { clients: 150, jobs: 10, visits: 100, invoices: 1000, 'objects/equipment': 5 }
      // Each changed row at its own millisecond, as writes spread over time are (a bulk write
      // stamping many rows with one millisecond is a tie, measured above).
      const now = Date.parse(((await control(emu, 'GET', '/clock')) as { now: string }).now)
      for (const [resource, k] of Object.entries(changed)) {
        const ids = (await live(emu, resource)).slice(0, k).map((r) => r.id)
        for (const [i, id] of ids.entries())
          await control(emu, 'POST', '/mutate', {
            resource,
            op: 'update',
            id,
            fields: { updatedAt: new Date(now - k + i).toISOString() },
            emit: false,
          })
      }
      await settle(emu)
      const after = await counted(emu, () => sweep(app))
      for (const [resource, k] of Object.entries(changed)) {
        const used = after.get(`/api/v1/${resource}`) ?? 0
        figures.push({
          metric: `sweep after ${k} changed ${resource.replace('objects/', '')}: requests / minimum ceil(${k}/100)`,
          value: used,
          unit: 'requests',
          ...atMost(used, minimumPages(k)),
        })
      }
      const rest = [...after].filter(([p]) => !Object.keys(changed).some((r) => p === `/api/v1/${r}`))
      notes.push(`Sweep after changes, the other lists: ${JSON.stringify(Object.fromEntries(rest))}.`)
    } finally {
      await app.close()
    }
  } finally {
    await emu.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function twentyThousand(figures: Figure[], notes: string[]): Promise<void> {
  const perStream = 20_000
  const counts = { clients: perStream, jobs: perStream, visitsPerJob: 1, invoices: perStream, customRecords: 0 }
  const emu = await startEmulator({ seed: 9, counts, rateLimit: false })
  const dir = tempDir('fsm-requests-20k-')
  try {
    const rows = new Map<string, number>()
    for (const s of RECORD_STREAMS) rows.set(s.route, (await live(emu, s.name)).length)
    const app = await openApp(emu, dir)
    try {
      const used = await counted(emu, () => sweep(app, undefined))
      const actual = RECORD_STREAMS.reduce((n, s) => n + (used.get(s.route) ?? 0), 0)
      const minimum = [...rows.values()].reduce((n, r) => n + minimumPages(r), 0)
      const ratio = actual / minimum
      figures.push({
        metric: `backfill of ${perStream} records per paged stream: requests / minimum`,
        value: Number(ratio.toFixed(4)),
        unit: 'ratio',
        ...atMost(ratio, 1.03),
        baseline: `${actual} requests, minimum ${minimum} (${[...rows.values()].join(' + ')} rows)`,
      })
      // At 60 starts in any sliding 60 s window, R requests need at least (R - 60) / 60 minutes
      // after the first window's 60; the governor reaches 0.997 of its budget (governor-budget).
      const budget = 60
      const governorShare = 0.997
      const atBudget = (n: number) => Math.max(0, n - budget) / (budget * governorShare)
      const minutes = atBudget(actual)
      const minimumMinutes = Math.max(0, minimum - budget) / budget
      figures.push({
        metric: `backfill of ${perStream} records per paged stream at 60/min: time / time of the minimum requests at the full budget`,
        value: Number((minutes / minimumMinutes).toFixed(4)),
        unit: 'ratio',
        ...atMost(minutes / minimumMinutes, 1.03),
        baseline: `${minutes.toFixed(1)} min for ${actual} requests; minimum ${minimumMinutes.toFixed(1)} min for ${minimum}`,
      })
      notes.push(
        `20k per stream: requests by list ${JSON.stringify(Object.fromEntries([...used].filter(([p]) => rows.has(p))))}. Time at 60/min is computed, not waited for: the requests counted at an unlimited rate, paced as the governor paces them (at most 60 starts in any sliding 60 s; it achieves 0.997 of a budget in the governor-budget bench), so (requests - 60) / (60 x 0.997) minutes.`,
      )
    } finally {
      await app.close()
    }
  } finally {
    await emu.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

export default async function requestEfficiencyBench(): Promise<BenchResult> {
  const figures: Figure[] = []
  const notes: string[] = []
  await tiedData(figures, notes)
  await twentyThousand(figures, notes)
  notes.push(
    'Each page after the first of a walk at one since re-reads the last row of the one before (since is inclusive), so a walk over k > 100 rows with distinct times costs 1 + ceil((k - 100) / 99) requests: the minimum up to k = 199, one more from k = 200 in some ranges.',
  )
  return { name: 'request-efficiency', topic: 'sync', figures, notes }
}
