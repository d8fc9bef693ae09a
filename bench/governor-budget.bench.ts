// Budget use: 2,000 requests through client + governor to a loopback server at a
// scaled budget of 3,000/min. Starts are timed at the server. Figures: achieved rate / budget, and
// the most starts in any 60 s window. A 40 s run cannot fill a 60 s window, so a second run keeps
// the same rate with a 4 s window (200 per 4 s) to show the sliding window holding under load.
import { fork } from 'node:child_process'
import { request } from 'undici'
import { ApiClient } from '../src/api/api-client.js'
import { RequestGovernor } from '../src/api/governor/index.js'
import { createLogger } from '../src/log/logger.js'
import { atLeast, atMost, maxInWindow, type BenchResult } from './lib.js'

const REQUESTS = 2_000
const BUDGET = 3_000

// The server runs in a child process, so its arrival times are not delayed by the client's own
// event loop (in one process the server saw requests up to ~40 ms after they were sent).
const SERVER = `
const http = require('node:http')
const arrivals = []
const body = JSON.stringify({ success: true, data: [], meta: { page: 1, limit: 100, total: 0 } })
const server = http.createServer((req, res) => {
  if (req.url === '/__arrivals') { res.end(JSON.stringify(arrivals)); return }
  arrivals.push(performance.timeOrigin + performance.now())
  res.writeHead(200, { 'content-type': 'application/json' })
  res.end(body)
})
server.keepAliveTimeout = 60000
server.listen(0, '127.0.0.1', () => process.send(server.address().port))
`

async function run(limit: number, windowMs: number, marginMs: number): Promise<number[]> {
  const child = fork('-e', [SERVER], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))))
  const base = `http://127.0.0.1:${port}`
  const governor = new RequestGovernor({ limitPerMinute: limit, windowMs, marginMs, maxInFlight: 4 })
  const client = new ApiClient({ baseUrl: base, apiKey: 'svc_live_bench', governor, logger: createLogger({ level: 'silent' }) })
  await Promise.all(Array.from({ length: REQUESTS }, () => client.get('/api/v1/jobs', { limit: 100 }, { priority: 'sweep' })))
  await client.close()
  const res = await request(`${base}/__arrivals`)
  const arrivals = (await res.body.json()) as number[]
  child.kill()
  return arrivals
}

export default async function (): Promise<BenchResult> {
  const minute = await run(BUDGET, 60_000, 250)
  const span = (minute.at(-1) ?? 0) - (minute[0] ?? 0)
  const ratePerMin = ((minute.length - 1) / span) * 60_000
  const use = Math.round((ratePerMin / BUDGET) * 1000) / 1000
  const most60 = maxInWindow(minute, 60_000)
  const most1 = maxInWindow(minute, 1_000)
  const scaled = await run(200, 4_000, 100)
  const most4 = maxInWindow(scaled, 4_000)
  const scaledSpan = (scaled.at(-1) ?? 0) - (scaled[0] ?? 0)
  const scaledUse = Math.round(((((scaled.length - 1) / scaledSpan) * 4_000) / 200) * 1000) / 1000
  return {
    name: 'governor-budget',
    topic: 'governor',
    figures: [
      {
        metric: 'achieved rate / budget (3,000/min, 2,000 requests)',
        value: use,
        unit: 'ratio',
        ...atLeast(use, 0.97),
        baseline: `${Math.round(ratePerMin)}/min achieved`,
      },
      { metric: 'most starts in any 60 s window (server side)', value: most60, unit: 'starts', ...atMost(most60, BUDGET) },
      { metric: 'most starts in any 1 s window (pacing; budget/60 = 50)', value: most1, unit: 'starts', goal: '' },
      {
        metric: 'scaled window 200 per 4 s: most starts in any 4 s window (server side)',
        value: most4,
        unit: 'starts',
        ...atMost(most4, 200),
      },
      { metric: 'scaled window 200 per 4 s: achieved rate / budget', value: scaledUse, unit: 'ratio', ...atLeast(scaledUse, 0.97) },
    ],
    notes: [
      'Starts are timed on arrival at a loopback server in a child process; 4 requests in flight at most; burst 2; jitter margin 250 ms (60 s run) and 100 ms (4 s run).',
      'A 40 s run cannot fill a 60 s window, hence the second run at the same rate with a 4 s window (windowMs is a governor option; production uses 60,000).',
      'Earlier tries with an in-process server and margins of 8 and 50 ms saw 102 and 201 starts at the server (the client side held exactly): arrival jitter, hence an absolute margin (250 ms by default).',
    ],
  }
}
