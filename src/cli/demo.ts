// `fsm-sync demo`: the real daemon against an emulated account, in one process. Starts the emulator
// (seeded data, then churn), runs `fsm-sync run`'s daemon on a loopback port with fast schedules and
// a mirror in a temporary folder (or --dir), registers the daemon's webhook endpoint the way
// `webhooks register` does, prints the backfill and example queries, then one line every few
// seconds of what flowed, read from the daemon's own state. Ctrl-C (or --duration) stops the
// daemon cleanly, then the emulator.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { request } from 'undici'
import { systemClock } from '../api/clock.js'
import { loadConfig } from '../config/index.js'
import { activityMark, activitySince, formatActivity } from '../daemon/activity.js'
import { startDaemon, type Daemon } from '../daemon/daemon.js'
import { createLogger } from '../log/logger.js'
import type { Sqlite } from '../store/mirror-database.js'
import { formatQueryResult, runReadOnlyQuery } from '../store/read-only-query.js'
import { isoNow, parseInstant } from '../store/timestamps.js'
import type { RunResult } from '../sync/sync-context.js'
import { selectStreams } from '../sync/sync-engine.js'
import { registerEndpoint } from '../webhooks/registration.js'
import type { Command } from './command.js'
import { formatResults } from './run-summary.js'

export const DEMO_QUERIES: readonly { title: string; sql: string }[] = [
  {
    title: 'Jobs by status',
    sql: `SELECT job_status, count(*) AS jobs, round(sum(total), 2) AS total FROM jobs WHERE deleted_at IS NULL GROUP BY job_status ORDER BY jobs DESC`,
  },
  {
    title: 'Clients with the most unpaid invoices',
    sql: `SELECT coalesce(nullif(c.company_name, ''), c.first_name || ' ' || c.last_name) AS client, count(*) AS invoices, round(sum(i.total), 2) AS unpaid
          FROM invoices i JOIN clients c ON c.id = i.client_id
          WHERE i.deleted_at IS NULL AND i.status IN ('unpaid', 'overdue', 'partial') GROUP BY c.id ORDER BY unpaid DESC LIMIT 5`,
  },
  {
    title: 'Visits by status',
    sql: `SELECT visit_status, count(*) AS visits FROM visits WHERE deleted_at IS NULL GROUP BY visit_status ORDER BY visits DESC`,
  },
  {
    title: 'Custom objects and their record counts',
    sql: `SELECT t.slug, t.view_name, count(r.id) AS records FROM custom_object_types t LEFT JOIN custom_records r ON r.slug = t.slug AND r.deleted_at IS NULL GROUP BY t.slug`,
  },
  {
    title: 'The latest changes (what a warehouse loader reads)',
    sql: `SELECT seq, table_name, record_id, op, changed_at FROM change_log ORDER BY seq DESC LIMIT 5`,
  },
]

/** Seconds between live lines. */
const REPORT_SECONDS = 5
/** Account changes per second once the backfill is done; about half of them send webhooks. */
const CHURN_PER_SECOND = 2

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

export const demoCommand: Command = {
  command: 'demo',
  describe:
    'Run the daemon against an emulated, changing account (webhooks included), print example queries, keep the mirror live until Ctrl-C',
  builder: (y) =>
    y
      .option('dir', { type: 'string', describe: 'folder for the mirror (default: a new temporary folder)' })
      .option('seed', { type: 'number', default: 1, describe: 'seed of the emulated account' })
      .option('interval', { type: 'number', default: 15, describe: 'seconds between incremental sweeps (1 to 59)' })
      .option('duration', { type: 'number', describe: 'stop this many seconds after the backfill (default: until Ctrl-C)' }),
  run: async (args, ctx) => {
    const out = ctx.io.stdout
    const interval = Number(args.interval)
    if (!Number.isInteger(interval) || interval < 1 || interval > 59) {
      ctx.io.stderr.write(`fsm-sync demo: --interval must be a whole number of seconds from 1 to 59, not ${String(args.interval)}\n`)
      return 2
    }
    const stop = new AbortController()
    const onSignal = () => {
      // A second Ctrl-C while the daemon stops: leave now (committed work is safe either way).
      if (stop.signal.aborted) process.exit(1)
      ctx.io.stderr.write('stopping: the daemon finishes the page in flight and drains its webhook inbox\n')
      stop.abort()
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    const { startEmulator } = await import('../../emulator/index.js')
    // The emulator may deliver webhooks to plain http on loopback: the daemon listens on 127.0.0.1.
    const emulator = await startEmulator({ seed: Number(args.seed), rateLimit: 60, allowHttpWebhooks: true })
    let daemon: Daemon | undefined
    try {
      const dir = typeof args.dir === 'string' ? args.dir : mkdtempSync(path.join(tmpdir(), 'fsm-demo-'))
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
        overrides: { schedules: demoSchedules(interval) },
      })
      const logger = createLogger({ level: config.logLevel, secrets: [emulator.apiKey], destination: process.stderr })
      const began = isoNow(Date.now())
      daemon = await startDaemon(config, logger)
      const d = daemon
      const sqlite = d.app.mirror.sqlite
      const webhookUrl = `${d.url}${config.webhooks.path}`
      out.write(
        `fsm-sync demo\n  emulated account: ${emulator.url} (the same API as production, in this process)\n` +
          `  daemon:           ${d.url} (/healthz, /readyz, /metrics; webhooks at ${config.webhooks.path})\n  mirror:           ${db}\n\n`,
      )
      // Registration and the backfill share the daemon's one request budget.
      const registration = registerEndpoint(d.app.client, d.webhooks.secrets, webhookUrl, Date.now)
      // Awaited after the backfill; a failure meanwhile must not count as unhandled.
      registration.catch(() => undefined)
      const backfill = Promise.all([d.firstSweep, d.scheduler.runNow('reference')])
      if (!(await untilAborted(backfill, stop.signal))) return stopped(out, db)
      const reg = await registration
      out.write(`Backfill:\n${formatResults(runsSince(sqlite, began), selectStreams(config.streams).notBuilt)}\n`)
      for (const q of DEMO_QUERIES) {
        out.write(`-- ${q.title}\n${q.sql.replace(/\s+/g, ' ')};\n${formatQueryResult(runReadOnlyQuery(sqlite, q.sql), 'table')}\n`)
      }
      out.write(`Query it yourself while this runs:\n  FSM_DB=${db} npx fsm-sync query "SELECT * FROM jobs LIMIT 5"\n\n`)

      // The account now changes on its own: some changes through the API (webhooks to the daemon),
      // some "in the web app" (no webhook: only the next sweep sees them).
      await request(`${emulator.url}/__emulator/churn`, {
        method: 'POST',
        body: JSON.stringify({ ratePerSecond: CHURN_PER_SECOND }),
        headers: { 'content-type': 'application/json' },
      }).then((r) => r.body.dump())
      out.write(
        `Webhooks: endpoint ${reg.endpointId} delivers every event to ${webhookUrl}.\n` +
          `The emulated account now changes about ${CHURN_PER_SECOND} times a second, half of it with webhooks. ` +
          `The daemon sweeps every ${interval} s and reconciles every 5 minutes; every ${REPORT_SECONDS} s a line shows what flowed. Ctrl-C stops.\n`,
      )
      const first = activityMark(sqlite, d.webhooks.metrics)
      let mark = first
      const startedLive = Date.now()
      const until = typeof args.duration === 'number' ? startedLive + args.duration * 1000 : Number.POSITIVE_INFINITY
      while (!stop.signal.aborted && Date.now() < until) {
        // Ctrl-C ends the wait early; the loop condition then ends the demo.
        await systemClock.sleep(Math.max(0, Math.min(REPORT_SECONDS * 1000, until - Date.now())), stop.signal).catch(() => undefined)
        const a = activitySince(sqlite, d.webhooks.metrics, mark)
        mark = a.next
        out.write(`[${new Date().toISOString().slice(11, 19)}] ${formatActivity(a)}\n`)
      }
      // The whole live phase, from the same counters.
      const total = activitySince(sqlite, d.webhooks.metrics, first)
      const sweeps = total.runs.filter((r) => r.kind === 'sweep').length
      out.write(
        `\nIn ${Math.round((Date.now() - startedLive) / 1000)} s: ${total.received} webhooks received, ${total.applied} applied into the mirror; ` +
          `${sweeps} stream sweeps; ${total.changes} rows changed.\n`,
      )
      return stopped(out, db)
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      // The daemon first (its page in flight commits, the inbox drains), then the account it reads.
      await daemon?.stop()
      await emulator.close()
    }
  },
}

function stopped(out: NodeJS.WritableStream, db: string): number {
  out.write(`Stopped. The mirror stays at ${db}.\n`)
  return 0
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
function runsSince(sqlite: Sqlite, began: string): RunResult[] {
  const rows = sqlite
    .prepare(
      `SELECT stream, kind, outcome, rows, requests, error, started_at, ended_at FROM sync_runs WHERE started_at >= ? AND ended_at IS NOT NULL ORDER BY id`,
    )
    .all(began) as {
    stream: string
    kind: string
    outcome: RunResult['outcome']
    rows: number
    requests: number
    error: string | null
    started_at: string
    ended_at: string
  }[]
  return rows.map((r) => ({
    stream: r.stream,
    kind: r.kind === 'reconcile' ? 'reconcile' : 'sweep',
    outcome: r.outcome,
    rows: r.rows,
    requests: r.requests,
    durationMs: parseInstant(r.ended_at) - parseInstant(r.started_at),
    ...(r.error === null ? {} : { error: r.error }),
  }))
}
