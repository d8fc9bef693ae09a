// The emulator must never be the bottleneck. Measures 100-row list requests per second on
// loopback (rate limit off, an undici keep-alive pool with concurrency, run in a worker thread so
// the client does not share the emulator's thread), beside a baseline: a bare node:http server
// answering a prebuilt body of the same size to the same client. Also the time to seed 10,000
// records (startEmulator until it listens; the records counted through the control API).
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { startEmulator } from '../emulator/index.js'
import { atLeast, atMost, type BenchResult } from './lib.js'

const COUNTS = { clients: 2000, jobs: 2000, visitsPerJob: 2, invoices: 2000 }
const CONNECTIONS = 8
const RUN_MS = 3000

// The load client: CommonJS evaluated in a worker; undici's path is passed in.
const CLIENT = `
const { workerData, parentPort } = require('node:worker_threads')
const { Pool } = require(workerData.undici)
;(async () => {
  const pool = new Pool(workerData.url, { connections: workerData.connections, keepAliveTimeout: 60000 })
  let done = 0, bytes = 0, bad = 0, n = 0
  const deadline = Date.now() + workerData.runMs
  const t0 = performance.now()
  await Promise.all(Array.from({ length: workerData.connections * 2 }, async () => {
    while (Date.now() < deadline) {
      const path = workerData.paths[n++ % workerData.paths.length]
      const res = await pool.request({ method: 'GET', path, headers: { 'x-api-key': workerData.key } })
      const buf = Buffer.from(await res.body.arrayBuffer())
      if (res.statusCode !== 200) bad++
      bytes += buf.length
      done++
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  await pool.close()
  parentPort.postMessage({ perSecond: Math.round(done / seconds), avgBytes: Math.round(bytes / done), bad })
})()
`

interface Load {
  perSecond: number
  avgBytes: number
  bad: number
}

function load(url: string, key: string, paths: string[]): Promise<Load> {
  const undici = createRequire(import.meta.url).resolve('undici')
  const worker = new Worker(CLIENT, { eval: true, workerData: { url, key, paths, undici, connections: CONNECTIONS, runMs: RUN_MS } })
  return new Promise((resolve, reject) => {
    worker.once('message', (m: Load) => resolve(m))
    worker.once('error', reject)
  })
}

async function seedTime(): Promise<{ ms: number; records: number }> {
  let best = Number.POSITIVE_INFINITY
  let records = 0
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now()
    const emu = await startEmulator({ seed: 100 + i, counts: COUNTS, rateLimit: false })
    best = Math.min(best, performance.now() - t0)
    const info = (await (await fetch(`${emu.url}/__emulator/info`)).json()) as { data: { records: number } }
    records = info.data.records
    await emu.close()
  }
  return { ms: Math.round(best), records }
}

async function baseline(bytes: number): Promise<Load> {
  const body = Buffer.alloc(bytes, 'a')
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) })
    res.end(body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const result = await load(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'x', ['/'])
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
  return result
}

export default async function (): Promise<BenchResult> {
  const seed = await seedTime()
  const emu = await startEmulator({ counts: COUNTS, rateLimit: false })
  const paths = ['clients', 'jobs', 'visits', 'invoices'].flatMap((r) =>
    Array.from({ length: 20 }, (_, p) => `/api/v1/${r}?limit=100&page=${p + 1}&sort=updatedAt:asc`),
  )
  // The emulator's own thread: busy time per answer (event-loop utilisation while the load ran).
  // Less sensitive than req/s to a loaded machine, and it tells whether the client or the server
  // is the bottleneck (a utilisation well below 1 means the server waits for the client).
  const elu0 = performance.eventLoopUtilization()
  const list = await load(emu.url, emu.apiKey, paths)
  const elu = performance.eventLoopUtilization(elu0)
  await emu.close()
  const busyMicros = Math.round((elu.active * 1000) / Math.max(1, (list.perSecond * RUN_MS) / 1000))
  if (list.bad > 0) throw new Error(`${list.bad} list requests did not answer 200`)
  const bare = await baseline(list.avgBytes)
  return {
    name: 'emulator',
    topic: 'emulator',
    figures: [
      {
        metric: '100-row list requests per second (loopback, rate limit off)',
        value: list.perSecond,
        unit: 'req/s',
        ...atLeast(list.perSecond, 2000),
        baseline: `bare node:http answering a prebuilt ${Math.round(list.avgBytes / 1024)} KiB body to the same client: ${bare.perSecond} req/s`,
      },
      {
        metric: 'emulator main-thread busy time per 100-row list answer',
        value: busyMicros,
        unit: 'µs',
        goal: '',
        baseline: `event-loop utilisation of the emulator thread during the run: ${elu.utilization.toFixed(2)}`,
      },
      { metric: `time to seed ${seed.records} records`, value: seed.ms, unit: 'ms', ...atMost(seed.ms, 2000) },
    ],
    notes: [
      `List requests: a worker-thread client, ${CONNECTIONS} keep-alive connections, ${CONNECTIONS * 2} concurrent callers for ${RUN_MS / 1000} s over clients, jobs, visits and invoices (sort=updatedAt:asc, pages 1-20, ${Math.round(list.avgBytes / 1024)} KiB per answer on average).`,
      'The baseline is the ceiling of this machine for bodies of that size: the emulator serves pages from cached per-record JSON bytes.',
      'Seeding: best of three startEmulator calls (generation plus listen): 2,000 clients, 2,000 jobs with 2 visits each, 2,000 invoices, custom records and reference data.',
    ],
  }
}
