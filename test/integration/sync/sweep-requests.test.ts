// What a sweep costs in requests, counted by the emulator (docs/sweeping.md, What a sweep costs). The
// minimum of an incremental sweep: per paged stream ceil(changed rows / 100), at least 1; per custom
// object its list pages; discovery once. Plus the shifted-tie cases that must still end exact.
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { clients, jobs, RECORD_STREAMS } from '../../../connectors/index.js'
import type { ApiResponse, CallOptions } from '../../../src/api/api-client.js'
import type { Query } from '../../../src/api/routes.js'
import { runSweeps } from '../../../src/sync/sync-engine.js'
import type { RunResult } from '../../../src/sync/sync-context.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { compareWithEmulator, syncEnv, type SyncEnv } from '../../support/sync-env.js'

interface Logged {
  path: string
  query: string
}

/** The requests the emulator saw while `work` ran, by path. */
async function counted(emu: EmulatorEnv, work: () => Promise<unknown>): Promise<{ byPath: Map<string, number>; log: Logged[] }> {
  await emu.control('POST', '/requests/clear')
  await work()
  const log = ((await emu.control('GET', '/requests')) as Logged[]).filter((r) => r.path.startsWith('/api/'))
  const byPath = new Map<string, number>()
  for (const r of log) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1)
  return { byPath, log }
}

/** Makes `count` records of `resource` share one updatedAt, after every seeded one and settled by the time of the next sweep. */
async function tie(emu: EmulatorEnv, resource: string, count: number, ids?: string[]): Promise<string> {
  const newest = Math.max(...(await emu.state(resource)).map((r) => Date.parse(r.updatedAt as string)))
  const now = Date.parse(((await emu.control('GET', '/clock')) as { now: string }).now)
  const at = new Date(Math.max(newest + 1, now - 60_000)).toISOString()
  await emu.control('POST', '/clock', { freezeAt: at })
  if (ids === undefined) await emu.control('POST', '/mutate', { resource, op: 'update', count })
  else for (const id of ids) await emu.control('POST', '/mutate', { resource, op: 'update', id })
  await emu.control('POST', '/clock', { freezeAt: null })
  await settle(emu)
  return at
}

/** Moves the emulator's clock past the look-back: what was written so far can no longer be joined by late rows. */
async function settle(emu: EmulatorEnv): Promise<void> {
  await emu.control('POST', '/clock', { advanceMs: 10_000 })
}

const everything = (env: SyncEnv, ctx = env.app.syncContext()) =>
  runSweeps(ctx, { records: [...RECORD_STREAMS], reference: [], metadata: [], objects: 'all', notBuilt: [] })

const STREAM_PATHS = RECORD_STREAMS.map((s) => s.route)

async function setup(seed: number) {
  const emu = await emulatorEnv({ seed, counts: { clients: 300, jobs: 200, visitsPerJob: 2, invoices: 120, customRecords: 150 } })
  const env = await syncEnv(emu)
  const first = await everything(env)
  expect(first.every((r) => r.outcome === 'success')).toBe(true)
  const slugs = first.filter((r) => r.stream.startsWith('objects:')).map((r) => r.stream.slice('objects:'.length))
  expect(slugs).toEqual(['equipment', 'inspections'])
  await settle(emu)
  return { emu, env, slugs }
}

describe('requests per sweep', () => {
  test('an idle sweep is one request per paged stream and per custom object, plus discovery; no schema is fetched', async () => {
    const { emu, env, slugs } = await setup(71)
    for (let round = 0; round < 2; round++) {
      let results: RunResult[] = []
      const { byPath, log } = await counted(emu, async () => (results = await everything(env)))
      expect(results.every((r) => r.outcome === 'success')).toBe(true)
      for (const p of STREAM_PATHS) expect(byPath.get(p), p).toBe(1)
      for (const slug of slugs) expect(byPath.get(`/api/v1/objects/${slug}`), slug).toBe(1)
      expect(byPath.get('/api/v1/objects')).toBe(1)
      expect(log.filter((r) => r.path.endsWith('/schema'))).toEqual([])
      expect(log).toHaveLength(STREAM_PATHS.length + slugs.length + 1)
      // sync_runs agrees with the upstream's count.
      expect(results.reduce((n, r) => n + r.requests, 0)).toBe(log.length)
    }
  })

  test('after k changed rows a sweep costs ceil(k / 100) per stream; the schemas come back after five minutes', async () => {
    const { emu, env, slugs } = await setup(73)
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 150 })
    await emu.control('POST', '/mutate', { resource: 'jobs', op: 'update', count: 100 })
    await emu.control('POST', '/mutate', { resource: 'visits', op: 'update', count: 10 })
    await emu.control('POST', '/mutate', { resource: `objects/${slugs[0]!}`, op: 'update', count: 5, emit: false })
    await settle(emu)
    const { byPath } = await counted(emu, () => everything(env))
    expect(STREAM_PATHS.map((p) => [p, byPath.get(p)])).toEqual([
      ['/api/v1/clients', 2],
      ['/api/v1/jobs', 1],
      ['/api/v1/visits', 1],
      ['/api/v1/invoices', 1],
    ])
    expect(await compareWithEmulator(emu, env)).toEqual([])
    // Five minutes later (by the injected clock), discovery fetches each schema and the client's once.
    const later = { ...env.app.syncContext(), now: () => Date.now() + 5 * 60_000 }
    const { log } = await counted(emu, () => everything(env, later))
    const schemas = log.filter((r) => r.path.endsWith('/schema')).map((r) => r.path)
    expect(schemas.sort()).toEqual([...slugs, 'client'].map((s) => `/api/v1/objects/${s}/schema`).sort())
  })

  test('a tie of 150 rows on one millisecond at the cursor costs no re-walk: the next sweeps are one request each', async () => {
    const { emu, env } = await setup(79)
    await tie(emu, 'jobs', 150)
    const read = await counted(emu, () => env.sync({ streams: [jobs] }))
    expect(read.byPath.get('/api/v1/jobs')).toBe(2)
    for (let round = 0; round < 3; round++) {
      const idle = await counted(emu, () => env.sync({ streams: [jobs] }))
      expect(idle.byPath.get('/api/v1/jobs')).toBe(1)
    }
    expect(await compareWithEmulator(emu, env, [jobs])).toEqual([])
  })
})

describe('a tie that shifts while it is stepped still ends exact', () => {
  /** Sweeps clients with `hook` run before each request (an upstream change at a chosen moment). */
  async function sweepWith(env: SyncEnv, hook: (query: Query | undefined) => Promise<void>) {
    const client = env.app.client
    const upstream = {
      get: async (path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse> => {
        if (path === clients.route) await hook(query)
        return client.get(path, query, options)
      },
    }
    const ctx = { ...env.app.syncContext(), upstream }
    return runSweeps(ctx, { records: [clients], reference: [], metadata: [], objects: undefined, notBuilt: [] })
  }

  async function tiedClients(emu: EmulatorEnv): Promise<{ at: string; ids: string[] }> {
    const ids = (await emu.state('clients'))
      .filter((r) => r.deleted !== true)
      .map((r) => r.id as string)
      .slice(0, 250)
    const at = await tie(emu, 'clients', 250, ids)
    return { at, ids: [...ids].sort() }
  }

  test('a clean tie of 250 is stepped once: three requests, no second pass', async () => {
    const { emu, env } = await setup(83)
    await tiedClients(emu)
    const { log } = await counted(emu, () => env.sync({ streams: [clients] }))
    expect(log.filter((r) => r.path === clients.route)).toHaveLength(3)
    expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
  })

  for (const change of ['updated', 'deleted'] as const) {
    test(`rows of the tie already read are ${change} before the next step: the tie is read again and nothing is skipped`, async () => {
      const { emu, env } = await setup(change === 'updated' ? 89 : 97)
      const { ids } = await tiedClients(emu)
      let done = false
      const { log } = await counted(emu, () =>
        sweepWith(env, async (query) => {
          if (done || Number(query?.page ?? 1) < 2) return
          done = true
          // Two rows of the first page leave the tie: the rest shift left by two, so a step that
          // trusted its offset would skip the row right after the first page.
          for (const id of [ids[3], ids[4]])
            await emu.control('POST', '/mutate', { resource: 'clients', op: change === 'updated' ? 'update' : 'delete', id })
        }),
      )
      // The tie's first page was asked for twice: once stepping, once again after the anchor moved.
      const firstPages = log.filter((r) => r.path === clients.route && new URLSearchParams(r.query).get('page') === '1')
      expect(firstPages.length).toBeGreaterThanOrEqual(2)
      const [run] = env.rows(`SELECT outcome FROM sync_runs WHERE stream = 'clients' ORDER BY id DESC LIMIT 1`)
      expect(run!.outcome).toBe('success')
      const mismatches = await compareWithEmulator(emu, env, [clients])
      // A deleted record is known only after reconciliation (or its webhook): nothing else may differ.
      const gone = change === 'deleted' ? [ids[3], ids[4]] : []
      expect(mismatches.filter((m) => !(gone.includes(m.id) && m.problem.startsWith('phantom')))).toEqual([])
      // (Without the read-again, the row right after the first page would be stale here.)
    })
  }
})

describe('a backfill learns the size of every stream before it goes on', () => {
  const COUNTS = { clients: 300, jobs: 200, visitsPerJob: 2, invoices: 120, customRecords: 10 }

  /** A backfill of the record streams on a fresh account: the requests, the live line, each stream's size. */
  async function backfill(withProgress: boolean) {
    const emu = await emulatorEnv({ seed: 101, counts: COUNTS })
    const env = await syncEnv(emu)
    const totals: number[] = []
    for (const route of STREAM_PATHS) totals.push((await emu.api('GET', `${route}?limit=1`)).body.meta.total as number)
    let text = ''
    const tty = new Writable({
      write(chunk: Buffer, _enc, done) {
        text += chunk.toString()
        done()
      },
    })
    const ctx = withProgress ? env.app.syncContext({ progressTty: tty }) : { ...env.app.syncContext(), progress: undefined }
    let results: RunResult[] = []
    const { log } = await counted(emu, async () => {
      results = await runSweeps(ctx, { records: [...RECORD_STREAMS], reference: [], metadata: [], objects: undefined, notBuilt: [] })
    })
    expect(results.map((r) => r.outcome)).toEqual(RECORD_STREAMS.map(() => 'success'))
    expect(await compareWithEmulator(emu, env, [...RECORD_STREAMS])).toEqual([])
    return { log, results, totals, lines: text.split('\r\x1b[2K').filter((l) => l !== '') }
  }

  test('the first page of every stream first; the first estimate counts every stream; not one request more than without', async () => {
    const ahead = await backfill(true)
    // Page 1 of each stream, in registry order, before any second page.
    expect(ahead.log.slice(0, STREAM_PATHS.length).map((r) => [r.path, new URLSearchParams(r.query).get('since')])).toEqual(
      STREAM_PATHS.map((p) => [p, null]),
    )
    const left = ahead.totals.reduce((a, b) => a + b, 0) - ahead.totals.reduce((a, t) => a + Math.min(100, t), 0)
    expect(ahead.lines[0]).toContain(`backfill left: ~${left.toLocaleString('en-US')} rows`)
    expect(ahead.lines.join('\n')).not.toContain('size not known')
    // Each page read ahead is stored by its stream's sweep and counted as its request.
    expect(ahead.results.reduce((n, r) => n + r.requests, 0)).toBe(ahead.log.length)
    const plain = await backfill(false)
    const byPath = (log: Logged[]) => STREAM_PATHS.map((p) => [p, log.filter((r) => r.path === p).length])
    expect(byPath(ahead.log)).toEqual(byPath(plain.log))
    expect(ahead.log).toHaveLength(plain.log.length)
  })
})
