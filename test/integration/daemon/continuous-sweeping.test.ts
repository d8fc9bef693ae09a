// Continuous sweeping against the emulator over loopback and a real mirror: the daemon finds a
// web-app change (no webhook) with no cron schedule firing, reads reference data at start, and
// shows each stream's staleness in /metrics and status; the sweeps never start more than their
// share of the budget in any window (fake time, starts counted where the client takes its slot);
// an idle account costs little, and a change after an idle hour is still found within the bound.
import { STATUS_STREAMS } from '../../../src/cli/status-streams.js'
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { FakeClock } from '../../support/fake-clock.js'
import type { CallOptions } from '../../../src/api/api-client.js'
import type { Query } from '../../../src/api/routes.js'
import path from 'node:path'
import { loadConfig } from '../../../src/config/index.js'
import { createApp } from '../../../src/daemon/create-app.js'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { SerialQueue } from '../../../src/daemon/sync-jobs.js'
import { DISCOVERY_EVERY_MS, SweepLoop } from '../../../src/daemon/sweep-loop.js'
import type { SweepPlan } from '../../../src/store/repositories/takeover-state.js'
import { createLogger } from '../../../src/log/logger.js'
import { statusReport } from '../../../src/store/read-models/status-report.js'
import { streamFreshness } from '../../../src/store/read-models/stream-freshness.js'
import type { RunResult } from '../../../src/sync/sync-context.js'
import { selectStreams } from '../../../connectors/selection.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { tempDir } from '../../support/temp-mirror.js'
import { sign } from '../../../src/webhooks/signature.js'
import { request } from 'undici'
import { NEVER, get, until } from '../../support/daemon-env.js'

const silent = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
/** Waits (in real time, a few ms at a time) until `ready`: the real I/O between two steps of fake time. */
async function settled(ready: () => boolean): Promise<void> {
  for (let i = 0; !ready(); i++) {
    if (i > 5_000) throw new Error('the sweeps never came to wait on the clock')
    await new Promise((r) => setTimeout(r, 2))
  }
}

const COUNTS = { clients: 4, jobs: 4, visitsPerJob: 1, invoices: 2, customRecords: 3 }

describe('continuous sweeping', () => {
  test('reference data right after start; a web-app change reaches the mirror with no cron firing; staleness in /metrics and status', async () => {
    const emu = await emulatorEnv({ counts: COUNTS })
    const base = inProcessDaemonConfig(emu)
    // Every schedule off or never due except the continuous sweeps; reference data has a schedule
    // (never due here), so the empty mirror gets it at start.
    // A bound of 10 s: a stream rests a bound once its backfill is done, and the change comes after it.
    const config = {
      ...base,
      rateLimit: 600,
      sync: { ...base.sync, maxSweepIntervalSeconds: 10 },
      schedules: { ...base.schedules, sweep: 'continuous', reference: NEVER },
    }
    const lines: { msg: string }[] = []
    const destination = new Writable({
      write: (c: Buffer, _e, cb) => {
        for (const l of c.toString('utf8').trim().split('\n')) lines.push(JSON.parse(l) as { msg: string })
        cb()
      },
    })
    const daemon = await startDaemon(config, { logger: createLogger({ level: 'info', destination }) })
    try {
      await daemon.referenceAtStart
      const count = (sql: string) => daemon.app.mirror.sqlite.prepare(sql).pluck().get() as number
      expect(count('SELECT count(*) FROM items')).toBeGreaterThan(0)
      expect(count('SELECT count(*) FROM taxes')).toBeGreaterThan(0)
      expect(count('SELECT count(*) FROM team_members')).toBeGreaterThan(0)
      await daemon.firstSweep
      // The sweep is no scheduled job: nothing cron-driven sweeps in this test.
      expect(Object.keys(daemon.scheduler.nextRuns())).not.toContain('sweep')
      const ready = await get(`${daemon.url}/readyz`)
      expect(ready.status).toBe(200)
      expect(JSON.parse(ready.text)).toMatchObject({ ready: true, next: { sweep: 'continuous' } })
      expect(daemon.sweeps?.streams()).toEqual(['clients', 'jobs', 'visits', 'invoices', 'objects:equipment', 'objects:inspections'])

      const [job] = (await emu.control('POST', '/mutate', {
        resource: 'jobs',
        op: 'update',
        count: 1,
        fields: { notes: 'changed in the web app' },
      })) as { id: string }[]
      const [record] = (await emu.control('POST', '/mutate', { resource: 'objects/equipment', op: 'update', count: 1, emit: false })) as {
        id: string
        updatedAt: string
      }[]
      await until('the web-app change in the mirror', () =>
        daemon.app.mirror.sqlite.prepare(`SELECT notes FROM jobs WHERE id = ?`).pluck().get(job!.id) === 'changed in the web app'
          ? true
          : undefined,
      )
      await until('the custom-object change in the mirror', () =>
        (daemon.app.mirror.sqlite.prepare(`SELECT updated_at FROM custom_records WHERE id = ?`).pluck().get(record!.id) as string) >=
        record!.updatedAt
          ? true
          : undefined,
      )
      // No webhook brought it: none is registered, the inbox is empty.
      expect(count('SELECT count(*) FROM webhook_inbox')).toBe(0)
      // A sweep a second logs nothing at info: the start says how the daemon sweeps, and that is all.
      expect(count(`SELECT count(*) FROM sync_runs WHERE kind = 'sweep'`)).toBeGreaterThan(7)
      expect(lines.map((l) => l.msg)).toContain('sweeping continuously within its share of the request budget')
      expect(lines.filter((l) => /^sweep (finished|progress)$/.test(l.msg))).toEqual([])

      const metrics = await get(`${daemon.url}/metrics`)
      expect(metrics.text).toMatch(/^fsm_stream_staleness_seconds\{stream="jobs",account="default"\} \d+(\.\d+)?$/m)
      expect(metrics.text).toMatch(/^fsm_stream_staleness_seconds\{stream="objects:equipment",account="default"\} \d+(\.\d+)?$/m)
      expect(metrics.text).toMatch(/^fsm_stream_staleness_seconds\{stream="taxes",account="default"\} \d+(\.\d+)?$/m)
      expect(metrics.text).toMatch(/^fsm_last_success_timestamp_seconds\{stream="jobs",account="default"\} \d+/m)
      expect(metrics.text).toMatch(/^fsm_sweep_budget_limit\{account="default"\} 510$/m)
      expect(metrics.text).not.toMatch(/^fsm_last_reconcile_success_timestamp_seconds\{/m)

      const report = statusReport(daemon.app.mirror.sqlite, Date.now(), STATUS_STREAMS)
      const jobs = report.streams.find((s) => s.stream === 'jobs')!
      expect(jobs.lastSweptAt).toMatch(/^\d{4}-\d\d-\d\dT/)
      expect(jobs.stalenessSeconds).toBeGreaterThanOrEqual(0)
      // Every stream is listed, the snapshot ones included, with what they hold.
      expect(report.streams.map((s) => s.stream)).toEqual(
        expect.arrayContaining(['items', 'taxes', 'team', 'job_forms', 'company', 'webhooks', 'api_keys', 'objects:equipment']),
      )
      expect(report.streams.find((s) => s.stream === 'taxes')).toMatchObject({ rows: expect.any(Number), lastSweptAt: expect.any(String) })
    } finally {
      await daemon.stop()
      await emu.close()
    }
  }, 60_000)

  test('sweeps start at most their share of the budget in any window, and use it (fake time)', async () => {
    const emu = await emulatorEnv({ counts: COUNTS })
    const clock = new FakeClock(Date.now())
    const config = { ...inProcessDaemonConfig(emu), rateLimit: 60 }
    const app = await createApp(config, { logger: silent(), clock })
    const starts: number[] = []
    // Each attempt is counted where it takes its slot, on the fake clock.
    const client = {
      get: (path: string, query: Query | undefined, options: CallOptions) =>
        app.client.get(path, query, {
          ...options,
          onAttempt: () => {
            starts.push(clock.now())
            options.onAttempt?.()
          },
        }),
    }
    const loop = new SweepLoop({
      context: (signal) => app.syncContext({ signal }),
      client,
      governor: app.governor,
      clock,
      selection: selectStreams(['clients', 'jobs', 'visits', 'invoices', 'objects']),
      budgetShare: 0.5,
      maxIntervalMs: 60_000,
      serialQueue: new SerialQueue(),
      logger: app.logger,
    })
    try {
      expect(loop.share.limit).toBe(30)
      loop.start()
      const end = clock.now() + 2 * 60_000
      for (let step = 0; clock.now() < end; step++) {
        // A web-app change a second keeps the account active (no stream rests for long).
        if (step % 2 === 0) await emu.control('POST', '/mutate', { resource: 'jobs', op: 'update', count: 1, emit: false })
        // Let the request in flight answer and the loop ask for its next slot, then move time on.
        await settled(() => app.governor.state().inFlight === 0 && clock.pending > 0)
        await clock.advance(500)
      }
      const window = app.governor.guardedWindowMs
      let most = 0
      for (let lo = 0, hi = 0; hi < starts.length; hi++) {
        while (starts[hi]! - starts[lo]! >= window) lo++
        most = Math.max(most, hi - lo + 1)
      }
      expect(most).toBeLessThanOrEqual(30)
      // On an active account, sweeping back to back fills the share: the busiest window holds nearly all of it.
      expect(most).toBeGreaterThanOrEqual(27)
    } finally {
      await loop.stop()
      await app.close()
      await emu.close()
    }
  }, 60_000)

  test('a record carrying a field the stored schema lacks: the sweep fetches the schema, before the next discovery (fake time)', async () => {
    const emu = await emulatorEnv({ counts: COUNTS })
    // The fake clock runs an hour behind the emulator's, so a record written now is newer than any
    // schema fetch the mirror records (what makes the sweep look at its fields).
    const clock = new FakeClock(Date.now() - 3_600_000)
    const app = await createApp(inProcessDaemonConfig(emu), { logger: silent(), clock })
    const loop = new SweepLoop({
      context: (signal) => app.syncContext({ signal }),
      client: app.client,
      governor: app.governor,
      clock,
      selection: selectStreams(['objects']),
      budgetShare: 0.5,
      maxIntervalMs: 60_000,
      serialQueue: new SerialQueue(),
      logger: app.logger,
    })
    const fields = (slug: string) =>
      (
        JSON.parse(app.mirror.sqlite.prepare(`SELECT fields FROM custom_object_types WHERE slug = ?`).pluck().get(slug) as string) as {
          name: string
        }[]
      ).map((f) => f.name)
    const step = async (ms: number) => {
      const end = clock.now() + ms
      while (clock.now() < end) {
        await settled(() => app.governor.state().inFlight === 0 && clock.pending > 0)
        await clock.advance(500)
      }
    }
    try {
      loop.start()
      const slug = ((await emu.api('GET', '/api/v1/objects')).body.data as { slug: string }[])[0]!.slug
      await step(10_000)
      await loop.firstPass
      expect(fields(slug)).not.toContain('warranty_code')
      const startedAt = clock.now()
      await emu.control('POST', `/objects/${slug}/fields`, { name: 'warranty_code', type: 'text' })
      const rec = ((await emu.state(`objects/${slug}`)) as { id: string; deleted?: boolean }[]).find((r) => r.deleted !== true)!
      const patched = await emu.api('PATCH', `/api/v1/objects/${slug}/${rec.id}`, { data: { warranty_code: 'W-1' } })
      expect(patched.status, JSON.stringify(patched.body)).toBe(200)
      // Within the bound the stream is swept again; discovery (every five minutes) is not due yet.
      await step(2 * 60_000)
      expect(clock.now() - startedAt).toBeLessThan(DISCOVERY_EVERY_MS)
      expect(fields(slug)).toContain('warranty_code')
    } finally {
      await loop.stop()
      await app.close()
      await emu.close()
    }
  }, 60_000)

  test('a loop that resumes a plan (a takeover) goes on with its schedule: no sweep before its streams come due, each within the bound (fake time)', async () => {
    const emu = await emulatorEnv({ counts: COUNTS })
    const clock = new FakeClock(Date.now())
    const app = await createApp(inProcessDaemonConfig(emu), { logger: silent(), clock })
    const plans: SweepPlan[] = []
    const loopOf = (more: Partial<ConstructorParameters<typeof SweepLoop>[0]>) =>
      new SweepLoop({
        context: (signal) => app.syncContext({ signal }),
        client: app.client,
        governor: app.governor,
        clock,
        selection: selectStreams(['clients', 'jobs', 'objects']),
        budgetShare: 0.5,
        maxIntervalMs: 60_000,
        serialQueue: new SerialQueue(),
        logger: app.logger,
        ...more,
      })
    const step = async (ms: number) => {
      const end = clock.now() + ms
      while (clock.now() < end) {
        await settled(() => app.governor.state().inFlight === 0 && clock.pending > 0)
        await clock.advance(500)
      }
    }
    const first = loopOf({ onPlan: (p) => plans.push(p) })
    let second: SweepLoop | undefined
    try {
      first.start()
      // Idle long enough for the rests to grow: the plan the next owner takes up.
      await step(3 * 60_000)
      await first.stop()
      const plan = plans[plans.length - 1]!
      expect(plan.streams.map((s) => s[0]).sort()).toEqual(expect.arrayContaining(['clients', 'jobs']))
      expect(plan.streams.length).toBeGreaterThan(2)
      expect(plan.discoveredAt).not.toBeNull()
      const resumedAt = clock.now()
      second = loopOf({ resume: plan })
      let passed = false
      void second.firstPass.then(() => (passed = true))
      second.start()
      await step(70_000)
      // Its first pass is the plan's; no discovery (the plan's is fresh), and each stream is swept
      // again when the first loop would have: long after its last sweep, within the bound of it.
      expect(passed).toBe(true)
      const runs = app.mirror.sqlite
        .prepare(`SELECT kind, stream, min(started_at) AS at FROM sync_runs WHERE started_at >= ? GROUP BY kind, stream`)
        .all(new Date(resumedAt).toISOString()) as { kind: string; stream: string; at: string }[]
      expect(runs.filter((r) => r.kind !== 'sweep')).toEqual([])
      expect(runs.map((r) => r.stream).sort()).toEqual(plan.streams.map((s) => s[0]).sort())
      for (const [stream, last] of plan.streams) {
        const gap = Date.parse(runs.find((r) => r.stream === stream)!.at) - Date.parse(last)
        expect(gap, stream).toBeGreaterThan(30_000)
        expect(gap, stream).toBeLessThanOrEqual(61_000)
      }
    } finally {
      await first.stop()
      await second?.stop()
      await app.close()
      await emu.close()
    }
  }, 60_000)

  test("a big stream's backfill takes turns: capped sweeps, the small stream swept in between, and status does not count a capped sweep as swept to the end (fake time)", async () => {
    const emu = await emulatorEnv({ counts: { clients: 4, jobs: 60, visitsPerJob: 1, invoices: 1, customRecords: 1 } })
    const clock = new FakeClock(Date.now())
    const app = await createApp({ ...inProcessDaemonConfig(emu, { sync: { pageSize: 5 } }), rateLimit: 60 }, { logger: silent(), clock })
    const results: RunResult[] = []
    let jobsFreshnessWhenCapped: number | null | undefined
    const loop = new SweepLoop({
      context: (signal) => app.syncContext({ signal }),
      client: app.client,
      governor: app.governor,
      clock,
      selection: selectStreams(['clients', 'jobs']),
      budgetShare: 0.5,
      // 30 requests a minute for the sweeps, a 10 s bound, two streams: two pages a sweep.
      maxIntervalMs: 10_000,
      serialQueue: new SerialQueue(),
      logger: app.logger,
      onRun: (r) => {
        results.push(r)
        if (r.stream === 'jobs' && r.details?.capped === true && jobsFreshnessWhenCapped === undefined)
          jobsFreshnessWhenCapped = streamFreshness(app.mirror.sqlite, ['jobs'], clock.now())[0]!.lastSweptAt
      },
    })
    try {
      expect(loop.pageCap()).toBe(2)
      loop.start()
      const end = clock.now() + 5 * 60_000
      const jobsDone = () => results.some((r) => r.stream === 'jobs' && r.outcome === 'success' && r.details?.capped === undefined)
      while (clock.now() < end && !jobsDone()) {
        await settled(() => app.governor.state().inFlight === 0 && clock.pending > 0)
        await clock.advance(500)
      }
      expect(jobsDone()).toBe(true)
      const jobs = results.filter((r) => r.stream === 'jobs')
      // Twelve pages of jobs, two a sweep: the backfill went on over several sweeps, each stopped at the cap.
      const capped = jobs.filter((r) => r.details?.capped === true)
      expect(capped.length).toBeGreaterThanOrEqual(4)
      for (const r of capped) expect(r.requests).toBeLessThanOrEqual(2)
      // The small stream was swept while the backfill was under way, more than once.
      const lastCapped = results.lastIndexOf(capped[capped.length - 1]!)
      const clientsBetween = results.slice(results.indexOf(capped[0]!), lastCapped).filter((r) => r.stream === 'clients')
      expect(clientsBetween.length).toBeGreaterThanOrEqual(2)
      // A capped sweep is not a sweep to the end: no "last swept" for jobs until one reached it.
      expect(jobsFreshnessWhenCapped).toBeNull()
      expect(app.mirror.sqlite.prepare(`SELECT count(*) FROM jobs`).pluck().get()).toBe(60)
    } finally {
      await loop.stop()
      await app.close()
      await emu.close()
    }
  }, 60_000)

  test('an idle account at the defaults: at most 10 requests a minute; after an idle hour a web-app change is found within 60 s, and a webhook wakes the sweeps at once (fake time)', async () => {
    // The emulator runs on the daemon's fake clock: its request log, rate limit (60 a minute, as
    // the daemon's default budget) and updatedAt stamps all follow it.
    const clock = new FakeClock(Date.UTC(2026, 0, 5, 8, 0, 30))
    const emu = await emulatorEnv({ counts: COUNTS, rateLimit: 60, now: () => clock.now() })
    const secret = 'whsec_idle_account_0123456789abcdef'
    // Every setting at its default (every schedule, the budget, the share, the bound).
    const config = loadConfig({
      env: {
        FSM_BASE_URL: emu.url,
        FSM_API_KEY: emu.apiKey,
        FSM_DB: path.join(tempDir(), 'mirror.db'),
        FSM_HTTP_HOST: '127.0.0.1',
        FSM_HTTP_PORT: '0',
        FSM_WEBHOOK_SECRETS: secret,
      },
    })
    expect(config.sync.maxSweepIntervalSeconds).toBe(60)
    const daemon = await startDaemon(config, { logger: silent(), clock })
    const sqlite = daemon.app.mirror.sqlite
    let seq = 0
    const log: { at: number; path: string; status: number }[] = []
    const readLog = async () => {
      for (const r of (await emu.control('GET', `/requests?after=${seq}&path=/api/`)) as {
        seq: number
        startedAt: string
        path: string
        status: number
      }[]) {
        log.push({ at: Date.parse(r.startedAt), path: r.path, status: r.status })
        seq = Math.max(seq, r.seq)
      }
    }
    // Fake time moves to the next timer once no request is in flight; `done` is checked at each step.
    const drive = async (ms: number, done: () => boolean = () => false) => {
      const end = clock.now() + ms
      while (clock.now() < end && !done()) {
        await settled(() => daemon.app.governor.state().inFlight === 0 && clock.pending > 0)
        if (done()) break
        const before = clock.now()
        await clock.advanceToNext()
        if (clock.now() > end) break
        if (clock.now() === before) await clock.advance(1)
      }
    }
    try {
      await drive(5 * 60_000)
      await daemon.firstSweep
      await readLog()
      const idleFrom = clock.now()
      let mostSweepStarts = 0
      await drive(60 * 60_000, () => {
        mostSweepStarts = Math.max(mostSweepStarts, daemon.sweeps!.share.startsInWindow())
        return false
      })
      await readLog()
      const idle = log.filter((r) => r.at >= idleFrom)
      const perMinute = Array.from(
        { length: 60 },
        (_, m) => idle.filter((r) => r.at - idleFrom >= m * 60_000 && r.at - idleFrom < (m + 1) * 60_000).length,
      )
      // Every request of the key, every default schedule included (the hourly reference data and
      // calendar triggers, failed deliveries every 10 minutes, the nightly reconciliation).
      expect(idle.length / 60, JSON.stringify(perMinute)).toBeLessThanOrEqual(10)
      // The continuous sweeps' own starts in any window of the budget (a little over a minute):
      // one round of the six streams, a discovery every five minutes (its list and the schemas),
      // and the next round, which comes due one sweep before the bound. Not 51.
      expect(mostSweepStarts).toBeLessThanOrEqual(14)
      expect(log.filter((r) => r.status === 429)).toEqual([])

      // A web-app change (no webhook) after the idle hour: in the mirror within the bound.
      const [visit] = (await emu.control('POST', '/mutate', { resource: 'visits', op: 'update', count: 1, emit: false })) as {
        id: string
        updatedAt: string
      }[]
      const changedAt = clock.now()
      const stored = () =>
        ((sqlite.prepare(`SELECT updated_at FROM visits WHERE id = ?`).pluck().get(visit!.id) as string) ?? '') >= visit!.updatedAt
      await drive(2 * 60_000, stored)
      expect(stored()).toBe(true)
      expect(clock.now() - changedAt).toBeLessThanOrEqual(60_000)

      // Idle again; then a signed webhook delivery: the resting sweeps plan again at once, and its
      // stream is swept within seconds, not at the bound.
      await drive(3 * 60_000)
      await readLog()
      const body = Buffer.from(JSON.stringify({ id: 'c-webhook', name: 'From a webhook', updatedAt: new Date(clock.now()).toISOString() }))
      const res = await request(`${daemon.url}${config.webhooks.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-event': 'client.updated',
          'x-service-delivery': 'd-idle-1',
          'x-service-signature': sign(secret, body),
        },
        body,
      })
      await res.body.text()
      expect(res.statusCode).toBe(200)
      const deliveredAt = clock.now()
      const clientsSweeps = () => {
        const runs = sqlite
          .prepare(`SELECT started_at FROM sync_runs WHERE kind = 'sweep' AND stream = 'clients' ORDER BY id DESC LIMIT 1`)
          .pluck()
          .get() as string
        return Date.parse(runs) >= deliveredAt
      }
      await drive(60_000, clientsSweeps)
      expect(clientsSweeps()).toBe(true)
      expect(clock.now() - deliveredAt).toBeLessThanOrEqual(5_000)

      // A flow of deliveries (one every 2 s for a minute) does not keep the account at its active
      // pace: each carries its change, so only the first after a quiet bound ends the rests.
      const flowFrom = clock.now()
      for (let i = 0; i < 30; i++) {
        const doc = Buffer.from(JSON.stringify({ id: 'c-webhook', name: `Flow ${i}`, updatedAt: new Date(clock.now()).toISOString() }))
        const r = await request(`${daemon.url}${config.webhooks.path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-service-event': 'client.updated',
            'x-service-delivery': `d-flow-${i}`,
            'x-service-signature': sign(secret, doc),
          },
          body: doc,
        })
        await r.body.text()
        expect(r.statusCode).toBe(200)
        await drive(2_000)
      }
      const flowSweeps = sqlite
        .prepare(`SELECT count(*) FROM sync_runs WHERE kind = 'sweep' AND started_at >= ?`)
        .pluck()
        .get(new Date(flowFrom).toISOString()) as number
      // About an idle minute's round (six streams) and the first one's doubling rests, not the share's 51.
      expect(flowSweeps).toBeLessThanOrEqual(16)
    } finally {
      await daemon.stop()
      await emu.close()
    }
  }, 180_000)
})
