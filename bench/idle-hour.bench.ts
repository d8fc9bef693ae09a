// An idle account at every default, on the FakeClock: `startDaemon` in this process and the
// emulator (rate limit 60, as the daemon's default budget) on one fake clock, so an hour runs in
// seconds and every time (the emulator's request log, its updatedAt stamps, the daemon's timers)
// is fake time. After the first pass, an hour with no change: every request of the key is counted
// by minute. Then, for each swept stream in turn, one web-app change (no webhook) after another
// idle hour, at a seeded offset: the fake time until the row is in the mirror.
import path from 'node:path'
import { Writable } from 'node:stream'
import { loadConfig } from '../src/config/index.js'
import { startDaemon } from '../src/daemon/daemon.js'
import { createLogger } from '../src/log/logger.js'
import { startEmulator } from '../emulator/index.js'
import { FakeClock } from '../test/support/fake-clock.js'
import { seededRandom } from '../test/support/seeded-random.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { atMost, maxInWindow, type BenchResult } from './lib.js'

const HOUR = 3_600_000
const COUNTS = { clients: 40, jobs: 60, visitsPerJob: 2, invoices: 30, customRecords: 20 }
/** The swept streams, as the emulator's control API names them, and where the row lands. */
const TRIALS: readonly [resource: string, table: string, slug: string | null][] = [
  ['clients', 'clients', null],
  ['jobs', 'jobs', null],
  ['visits', 'visits', null],
  ['invoices', 'invoices', null],
  ['objects/equipment', 'custom_records', 'equipment'],
  ['objects/inspections', 'custom_records', 'inspections'],
]

const round1 = (x: number) => Math.round(x * 10) / 10

export default async function (): Promise<BenchResult> {
  const clock = new FakeClock(Date.UTC(2026, 0, 5, 8, 0, 30))
  const emu = await startEmulator({ counts: COUNTS, rateLimit: 60, now: () => clock.now() })
  const control = async (method: 'GET' | 'POST', p: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${emu.url}/__emulator${p}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    })
    const json = (await res.json()) as { success?: boolean; data?: unknown }
    return json.success === true && 'data' in json ? json.data : json
  }
  const config = loadConfig({
    env: {
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_DB: path.join(tempDir('fsm-bench-idle-'), 'mirror.db'),
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: '0',
    },
  })
  const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
  const realStart = Date.now()
  const daemon = await startDaemon(config, { logger, clock })
  const sqlite = daemon.app.mirror.sqlite
  // Fake time moves to the next timer once no request is in flight (the real I/O between two steps).
  const drive = async (ms: number, done: () => boolean = () => false) => {
    const end = clock.now() + ms
    while (clock.now() < end && !done()) {
      for (let i = 0; !(daemon.app.governor.state().inFlight === 0 && clock.pending > 0); i++) {
        if (i > 5_000) throw new Error('the daemon never came to wait on the clock')
        await new Promise((r) => setTimeout(r, 2))
      }
      if (done()) break
      const before = clock.now()
      await clock.advanceToNext()
      if (clock.now() === before) await clock.advance(1)
    }
  }
  try {
    await drive(10 * 60_000, () => false)
    await daemon.firstSweep
    const idleFrom = clock.now()
    await drive(HOUR)
    const log = (await control('GET', '/requests?path=/api/')) as { startedAt: string; path: string; status: number }[]
    const idle = log.map((r) => ({ at: Date.parse(r.startedAt), path: r.path })).filter((r) => r.at >= idleFrom && r.at < idleFrom + HOUR)
    const perMinute = Array.from(
      { length: 60 },
      (_, m) => idle.filter((r) => r.at >= idleFrom + m * 60_000 && r.at < idleFrom + (m + 1) * 60_000).length,
    )
    const swept = idle.filter((r) => /^\/api\/v1\/(clients|jobs|visits|invoices|objects)(\/|$)/.test(r.path))
    const mean = round1(idle.length / 60)
    const sortedMinutes = [...perMinute].sort((a, b) => a - b)
    const limited = log.filter((r) => r.status === 429).length

    const random = seededRandom(24)
    const wakes: { resource: string; seconds: number }[] = []
    for (const [resource, table, slug] of TRIALS) {
      await drive(HOUR + Math.floor(random() * 60_000))
      const [doc] = (await control('POST', '/mutate', { resource, op: 'update', count: 1, emit: false })) as {
        id: string
        updatedAt: string
      }[]
      const read =
        slug === null
          ? () => sqlite.prepare(`SELECT updated_at FROM "${table}" WHERE id = ?`).pluck().get(doc!.id)
          : () => sqlite.prepare(`SELECT updated_at FROM custom_records WHERE slug = ? AND id = ?`).pluck().get(slug, doc!.id)
      const seen = () => ((read() as string | undefined) ?? '') >= doc!.updatedAt
      const writtenAt = clock.now()
      await drive(5 * 60_000, seen)
      wakes.push({ resource, seconds: seen() ? round1((clock.now() - writtenAt) / 1000) : Number.NaN })
    }
    const worst = Math.max(...wakes.map((w) => w.seconds))
    const realSeconds = round1((Date.now() - realStart) / 1000)
    return {
      name: 'idle-hour',
      topic: 'freshness',
      figures: [
        {
          metric: 'requests per minute of an idle account over an hour, every default (FakeClock)',
          value: mean,
          unit: 'requests',
          ...atMost(mean, 10),
          baseline: 'before the back-off: 51.0 a minute (the same daemon on the FakeClock, in the integration test, before this change)',
        },
        { metric: 'idle hour: median minute', value: sortedMinutes[30]!, unit: 'requests', goal: '' },
        {
          metric: 'idle hour: busiest minute (the hourly reference data falls in it)',
          value: sortedMinutes[59]!,
          unit: 'requests',
          goal: '',
        },
        {
          metric: 'idle hour: most requests in any 60 s window',
          value: maxInWindow(
            idle.map((r) => r.at),
            60_000,
          ),
          unit: 'requests',
          goal: '',
        },
        {
          metric: 'first web-app change after an idle hour: worst of six streams, time until in the mirror (FakeClock)',
          value: worst,
          unit: 's',
          ...atMost(worst, 60),
        },
        { metric: '429 answers', value: limited, unit: 'answers', ...atMost(limited, 0) },
      ],
      notes: [
        `Simulated on the FakeClock, not in real time: the daemon (startDaemon, every setting at its default: rateLimit 60, sync.budgetShare 0.85, sync.maxSweepIntervalSeconds 60, every schedule) and the emulator share one fake clock; about 7 hours of fake time took ${realSeconds} s.`,
        `Idle hour: ${idle.length} requests, ${swept.length} of them the continuous sweeps and discoveries (list routes of the four record streams and custom objects, schema reads), the rest the hourly reference data, calendar triggers and the failed-delivery check every 10 minutes. Requests by minute: ${JSON.stringify(perMinute)}.`,
        `First change after an idle hour, by stream (s): ${JSON.stringify(Object.fromEntries(wakes.map((w) => [w.resource, w.seconds])))}; each change made at a seeded offset after its own idle hour, with no webhook.`,
      ],
    }
  } finally {
    await daemon.stop()
    await emu.close()
  }
}
