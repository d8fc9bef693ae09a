// `fsm-sync demo` orchestrated: the real daemon against an emulated account, in one process. Starts
// the emulator (seeded data, then churn), runs `fsm-sync run`'s daemon on a loopback port with fast
// schedules and a mirror in a temporary folder (or `dir`), registers the daemon's webhook endpoint
// the way `webhooks register` does, runs the backfill and the example queries, then reports every
// few seconds what flowed, read from the daemon's own state. The signal (or the duration) stops the
// account's changes and deliveries, then the daemon, then the emulator. Nothing here prints: each
// step is handed to `DemoEvents`.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { request } from 'undici'
import type { BudgetWait } from '../api/governor/index.js'
import { systemClock, type Clock } from '../model/clock.js'
import { loadConfig } from '../config/index.js'
import { createLogger } from '../log/logger.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { runReadOnlyQuery, type QueryResult } from '../store/sqlite/read-only-query.js'
import { RunHistory } from '../store/read-models/run-history.js'
import { isoNow, parseInstant } from '../model/timestamps.js'
import type { RunResult } from '../sync/sync-context.js'
import { selectStreams, STREAM_CHOICE } from '../../connectors/selection.js'
import { registerEndpoint } from '../webhooks/registration.js'
import { activityMark, activitySince, type Activity } from './activity.js'
import { startDaemon, type Daemon } from './daemon.js'
import { DEMO_QUERIES } from './demo-queries.js'

/** Seconds between live reports. */
export const REPORT_SECONDS = 5
/** Account changes per second once the backfill is done; about half of them send webhooks. */
export const CHURN_PER_SECOND = 2

/**
 * Demo schedules (6-field cron: seconds first): sweeps every `sweepSeconds`, the rest every few
 * minutes so that each shows up while someone watches. Accounting moves no data: off.
 */
export function demoSchedules(sweepSeconds: number): Record<string, string> {
  return {
    sweep: `*/${sweepSeconds} * * * * *`,
    reconcile: '40 */5 * * * *',
    reference: '30 */5 * * * *',
    calendarA: '45 */2 * * * *',
    calendarB: '50 */10 * * * *',
    accounting: 'off',
    deliveries: '20 */2 * * * *',
  }
}

export interface DemoOptions {
  seed: number
  /** Seconds between incremental sweeps (1 to 59: a 6-field cron step). */
  sweepSeconds: number
  /** Folder for the mirror. Default: a new temporary folder. */
  dir?: string
  /** Stop this many seconds after the backfill. Default: when `signal` aborts. */
  durationSeconds?: number
  signal: AbortSignal
  /** Where the daemon logs (warnings and errors). */
  logDestination: NodeJS.WritableStream
  clock?: Clock
}

/** What the demo did, step by step, for someone to print. */
export interface DemoEvents {
  started(e: { emulatorUrl: string; daemonUrl: string; webhookPath: string; db: string }): void
  backfilled(e: {
    db: string
    /** `snapshot`: a read of reference data or account metadata, whole. */
    runs: (RunResult & { snapshot: boolean })[]
    notBuilt: readonly string[]
    queries: { title: string; sql: string; result: QueryResult }[]
  }): void
  live(e: { endpointId: string; webhookUrl: string; churnPerSecond: number; sweepSeconds: number; reportSeconds: number }): void
  activity(e: { at: number; activity: Activity }): void
  summary(e: { seconds: number; total: Activity; sweeps: number }): void
  /** The demo ends (after the summary, or at once when stopped during the backfill). */
  stopped(e: { db: string }): void
  /** Once, however the demo ends: the account has stopped changing, and the daemon and then the emulator stop next. */
  teardown(): void | Promise<void>
}

export async function runDemo(options: DemoOptions, events: DemoEvents): Promise<void> {
  const clock = options.clock ?? systemClock
  const { signal, sweepSeconds } = options
  const { startEmulator } = await import('../../emulator/index.js')
  // The emulator may deliver webhooks to plain http on loopback: the daemon listens on 127.0.0.1.
  const emulator = await startEmulator({ seed: options.seed, rateLimit: 60, allowHttpWebhooks: true })
  let daemon: Daemon | undefined
  try {
    const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'fsm-demo-'))
    const db = path.join(dir, 'fsm-mirror.db')
    const config = loadConfig({
      env: {
        FSM_BASE_URL: emulator.url,
        FSM_API_KEY: emulator.apiKey,
        FSM_DB: db,
        FSM_LOG_LEVEL: 'warn',
        FSM_HTTP_HOST: '127.0.0.1',
        FSM_HTTP_PORT: '0',
      },
      overrides: { schedules: demoSchedules(sweepSeconds) },
      streams: STREAM_CHOICE,
    })
    const logger = createLogger({ level: config.logLevel, secrets: [emulator.apiKey], destination: options.logDestination })
    const began = isoNow(clock.now())
    daemon = await startDaemon(config, { logger, clock })
    const d = daemon
    const sqlite = d.app.mirror.sqlite
    const webhookUrl = `${d.url}${config.webhooks.path}`
    events.started({ emulatorUrl: emulator.url, daemonUrl: d.url, webhookPath: config.webhooks.path, db })
    // Registration and the backfill share the daemon's one request budget.
    const registration = registerEndpoint(d.app.client, d.webhooks.secrets, webhookUrl, () => clock.now())
    // Awaited after the backfill; a failure meanwhile must not count as unhandled.
    registration.catch(() => undefined)
    // Reference data: read at start by the daemon when the mirror has none, else read here.
    const backfill = Promise.all([d.firstSweep, d.referenceAtStart.then((read) => read || d.scheduler.runNow('reference'))])
    if (!(await untilAborted(backfill, signal))) {
      events.stopped({ db })
      return
    }
    const reg = await registration
    events.backfilled({
      db,
      runs: runsSince(sqlite, began),
      notBuilt: selectStreams(config.streams).notBuilt,
      queries: DEMO_QUERIES.map((q) => ({ ...q, result: runReadOnlyQuery(sqlite, q.sql) })),
    })

    // The account now changes on its own: some changes through the API (webhooks to the daemon),
    // some "in the web app" (no webhook: only the next sweep sees them).
    await request(`${emulator.url}/__emulator/churn`, {
      method: 'POST',
      body: JSON.stringify({ ratePerSecond: CHURN_PER_SECOND }),
      headers: { 'content-type': 'application/json' },
    }).then((r) => r.body.dump())
    events.live({ endpointId: reg.endpointId, webhookUrl, churnPerSecond: CHURN_PER_SECOND, sweepSeconds, reportSeconds: REPORT_SECONDS })
    const first = activityMark(sqlite, d.webhooks.metrics)
    let mark = first
    const startedLive = clock.now()
    const until = options.durationSeconds === undefined ? Number.POSITIVE_INFINITY : startedLive + options.durationSeconds * 1000
    while (!signal.aborted && clock.now() < until) {
      // The signal ends the wait early; the loop condition then ends the demo.
      await clock.sleep(Math.max(0, Math.min(REPORT_SECONDS * 1000, until - clock.now())), signal).catch(() => undefined)
      const activity = activitySince(sqlite, d.webhooks.metrics, mark, { now: clock.now(), streams: liveStreams(d), waits: budgetWaits(d) })
      mark = activity.next
      events.activity({ at: clock.now(), activity })
    }
    // The whole live phase, from the same counters.
    const total = activitySince(sqlite, d.webhooks.metrics, first)
    const sweeps = total.runs.filter((r) => r.kind === 'sweep').length
    events.summary({ seconds: Math.round((clock.now() - startedLive) / 1000), total, sweeps })
    events.stopped({ db })
  } finally {
    try {
      await quietAccount(emulator.url)
    } finally {
      await events.teardown()
      // The daemon first (its page in flight commits, the inbox drains), then the account it reads.
      await daemon?.stop()
      await emulator.close()
    }
  }
}

/**
 * The account stops changing and every delivery it sent is answered while the daemon still takes
 * them: one arriving while the daemon stops is refused (503) and logged as an error, which a clean
 * end of the demo must not show.
 */
async function quietAccount(emulatorUrl: string): Promise<void> {
  for (const [route, body] of [
    ['churn', { stop: true }],
    ['deliveries/flush', {}],
  ] as const) {
    const r = await request(`${emulatorUrl}/__emulator/${route}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    })
    await r.body.dump()
    if (r.statusCode !== 200) throw new Error(`the emulated account did not stop (${route}: ${r.statusCode})`)
  }
}

/** The streams whose staleness the live line shows: those the sweeps keep (records, then custom objects). */
function liveStreams(d: Daemon): string[] {
  return d.sweeps?.streams() ?? selectStreams(d.app.config.streams).records.map((s) => s.name)
}

/** The requests waiting for the budget now: in the governor, and in the continuous sweeps' share before it. */
function budgetWaits(d: Daemon): BudgetWait[] {
  return [...d.app.governor.waiting(), ...(d.sweeps?.share.waiting() ?? [])]
}

/** Resolves true when `work` ends, false when the signal aborts first. */
async function untilAborted(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false
  let onAbort: (() => void) | undefined
  const aborted = new Promise<false>((resolve) => signal.addEventListener('abort', (onAbort = () => resolve(false)), { once: true }))
  try {
    return await Promise.race([work.then(() => true as const), aborted])
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort)
  }
}

/** The runs the daemon recorded since `began`, in order, as the `sync` summary prints them. */
function runsSince(sqlite: Sqlite, began: string): (RunResult & { snapshot: boolean })[] {
  return new RunHistory(sqlite).finishedSince(began).map((r) => ({
    snapshot: r.kind === 'reference',
    stream: r.stream,
    kind: r.kind,
    outcome: r.outcome,
    rows: r.rows,
    requests: r.requests,
    durationMs: parseInstant(r.endedAt) - parseInstant(r.startedAt),
    ...(r.error === null ? {} : { error: r.error }),
  }))
}
