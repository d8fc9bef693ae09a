// `fsm-sync demo`: the main job on embedded defaults. Starts the emulated account with churn, mirrors
// it into SQLite (a temporary folder, or --dir), prints example queries with their results, then
// keeps sweeping so changes visibly flow, until Ctrl-C (or --duration seconds).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { request } from 'undici'
import { systemClock } from '../api/clock.js'
import { loadConfig } from '../config/index.js'
import { createRuntime } from '../daemon/runtime.js'
import { createLogger } from '../log/logger.js'
import { formatQueryResult, runReadOnlyQuery } from '../store/read-only-query.js'
import { runReconciliations, runSweeps, selectStreams } from '../sync/sync-engine.js'
import type { RunResult } from '../sync/sync-context.js'
import type { Command } from './command.js'
import { formatResults } from './run-summary.js'

export const DEMO_QUERIES: readonly { title: string; sql: string }[] = [
  { title: 'Jobs by status', sql: `SELECT job_status, count(*) AS jobs, round(sum(total), 2) AS total FROM jobs WHERE deleted_at IS NULL GROUP BY job_status ORDER BY jobs DESC` },
  {
    title: 'Clients with the most unpaid invoices',
    sql: `SELECT coalesce(nullif(c.company_name, ''), c.first_name || ' ' || c.last_name) AS client, count(*) AS invoices, round(sum(i.total), 2) AS unpaid
          FROM invoices i JOIN clients c ON c.id = i.client_id
          WHERE i.deleted_at IS NULL AND i.status IN ('unpaid', 'overdue', 'partial') GROUP BY c.id ORDER BY unpaid DESC LIMIT 5`,
  },
  { title: 'Visits by status', sql: `SELECT visit_status, count(*) AS visits FROM visits WHERE deleted_at IS NULL GROUP BY visit_status ORDER BY visits DESC` },
  { title: 'Custom objects and their record counts', sql: `SELECT t.slug, t.view_name, count(r.id) AS records FROM custom_object_types t LEFT JOIN custom_records r ON r.slug = t.slug AND r.deleted_at IS NULL GROUP BY t.slug` },
  { title: 'The latest changes (what a warehouse loader reads)', sql: `SELECT seq, table_name, record_id, op, changed_at FROM change_log ORDER BY seq DESC LIMIT 5` },
]

export const demoCommand: Command = {
  command: 'demo',
  describe: 'Start the emulator and a sync loop together, print example queries, and keep the mirror fresh until Ctrl-C',
  builder: (y) =>
    y
      .option('dir', { type: 'string', describe: 'folder for the mirror (default: a new temporary folder)' })
      .option('seed', { type: 'number', default: 1, describe: 'seed of the emulated account' })
      .option('interval', { type: 'number', default: 10, describe: 'seconds between incremental sweeps' })
      .option('duration', { type: 'number', describe: 'stop after this many seconds (default: until Ctrl-C)' }),
  run: async (args, ctx) => {
    const out = ctx.io.stdout
    const { startEmulator } = await import('../../emulator/index.js')
    const emulator = await startEmulator({ seed: Number(args.seed), rateLimit: 60 })
    const dir = typeof args.dir === 'string' ? args.dir : mkdtempSync(path.join(tmpdir(), 'fsm-demo-'))
    const db = path.join(dir, 'fsm-mirror.db')
    const config = loadConfig({ env: { FSM_BASE_URL: emulator.url, FSM_API_KEY: emulator.apiKey, FSM_DB: db, FSM_LOG_LEVEL: 'warn' } })
    const rt = await createRuntime(config, createLogger({ level: 'warn', secrets: [emulator.apiKey], destination: process.stderr }))
    const stop = new AbortController()
    const onSignal = () => stop.abort()
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    try {
      out.write(`fsm-sync demo\n  emulated account: ${emulator.url} (the same API as production, in this process)\n  mirror:           ${db}\n\n`)
      const selection = selectStreams(config.streams)
      const first = await runSweeps(rt.syncContext({ signal: stop.signal }), selection)
      out.write(`Backfill:\n${formatResults(first, selection.notBuilt)}\n`)
      for (const q of DEMO_QUERIES) {
        out.write(`-- ${q.title}\n${q.sql.replace(/\s+/g, ' ')};\n${formatQueryResult(runReadOnlyQuery(rt.mirror.sqlite, q.sql), 'table')}\n`)
      }
      out.write(`Query it yourself while this runs:\n  FSM_DB=${db} npx fsm-sync query "SELECT * FROM jobs LIMIT 5"\n\n`)
      // The account changes on its own now (creates, updates, deletes, some in the "web app").
      await request(`${emulator.url}/__emulator/churn`, { method: 'POST', body: JSON.stringify({ ratePerSecond: 1 }), headers: { 'content-type': 'application/json' } }).then((r) => r.body.dump())
      out.write(`The emulated account now changes about once a second; sweeping every ${String(args.interval)} s. Ctrl-C stops.\n`)
      const until = typeof args.duration === 'number' ? Date.now() + args.duration * 1000 : Number.POSITIVE_INFINITY
      let cycle = 0
      while (!stop.signal.aborted && Date.now() < until) {
        // Ctrl-C ends the wait early; the loop condition then ends the demo.
        await systemClock.sleep(Math.max(0, Math.min(Number(args.interval) * 1000, until - Date.now())), stop.signal).catch(() => undefined)
        if (stop.signal.aborted || Date.now() >= until) break
        cycle++
        const results: RunResult[] = await runSweeps(rt.syncContext({ signal: stop.signal }), { ...selection, reference: [], metadata: [] })
        if (cycle % 6 === 0) results.push(...(await runReconciliations(rt.syncContext({ signal: stop.signal }), { ...selection, reference: [], metadata: [], objects: undefined })))
        const changed = results.filter((r) => r.rows > 0).map((r) => `${r.stream} ${r.kind === 'reconcile' ? 'deleted' : 'changed'} ${r.rows}`)
        const spent = results.reduce((n, r) => n + r.requests, 0)
        const failed = results.filter((r) => r.outcome !== 'success').map((r) => `${r.stream}: ${r.error ?? r.outcome}`)
        out.write(`[${new Date().toISOString().slice(11, 19)}] sweep ${cycle}: ${changed.join(', ') || 'no changes'}; ${spent} requests${failed.length > 0 ? `; ${failed.join('; ')}` : ''}\n`)
      }
      out.write(`\nStopped. The mirror stays at ${db}.\n`)
      return 0
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await rt.close()
      await emulator.close()
    }
  },
}
