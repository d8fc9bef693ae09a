// Client overhead: time per request through client + governor (budget set very
// high) against a bare `undici.request` loop on the same loopback server, in the same run. Both are
// sequential loops that parse the JSON body; they alternate in rounds so drift hits both alike.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { ApiClient } from '../src/api/api-client.js'
import { RequestGovernor } from '../src/api/governor/index.js'
import { createLogger } from '../src/log/logger.js'
import { atMost, type BenchResult } from './lib.js'

const ROUNDS = 6
const PER_ROUND = 1_000

export default async function (): Promise<BenchResult> {
  const rows = Array.from({ length: 5 }, (_, i) => ({ id: String(i).padStart(24, '0'), updatedAt: '2025-01-01T00:00:00.000Z', total: i }))
  const body = JSON.stringify({ success: true, data: rows, meta: { page: 1, limit: 5, total: 5 } })
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(body)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const base = `http://127.0.0.1:${port}`
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  const governor = new RequestGovernor({ limitPerMinute: 100_000, burst: 100_000, maxInFlight: 4 })
  const client = new ApiClient({ baseUrl: base, apiKey: 'svc_live_bench', governor, logger: createLogger({ level: 'silent' }) })

  const bare = async (n: number): Promise<number> => {
    const t = performance.now()
    for (let i = 0; i < n; i++) {
      const res = await request(`${base}/api/v1/jobs?limit=5&page=1`, { dispatcher: agent, headers: { 'x-api-key': 'svc_live_bench' } })
      await res.body.json()
    }
    return performance.now() - t
  }
  const viaClient = async (n: number): Promise<number> => {
    const t = performance.now()
    for (let i = 0; i < n; i++) await client.get('/api/v1/jobs', { limit: 5, page: 1 }, { priority: 'sweep' })
    return performance.now() - t
  }

  await bare(300)
  await viaClient(300)
  let bareMs = 0
  let clientMs = 0
  for (let r = 0; r < ROUNDS; r++) {
    bareMs += await bare(PER_ROUND)
    clientMs += await viaClient(PER_ROUND)
  }
  await client.close()
  await agent.close()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))

  const n = ROUNDS * PER_ROUND
  const perBare = bareMs / n
  const perClient = clientMs / n
  const ratio = Math.round((perClient / perBare) * 1000) / 1000
  return {
    name: 'client-overhead',
    topic: 'governor',
    figures: [
      {
        metric: 'time per request, client + governor / bare undici.request',
        value: ratio,
        unit: 'ratio',
        ...atMost(ratio, 1.3),
        baseline: `bare ${(perBare * 1000).toFixed(0)} µs, client ${(perClient * 1000).toFixed(0)} µs`,
      },
    ],
    notes: [`${n} sequential requests each way in ${ROUNDS} alternating rounds, loopback, 5-row JSON body parsed in both loops.`],
  }
}
