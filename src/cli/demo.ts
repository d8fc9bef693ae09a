// `fsm-sync demo`: parses the options, runs the demo (src/daemon/demo.ts: the real daemon against
// an emulated, changing account) and prints each of its steps: the addresses, the backfill and
// example queries, then one line every few seconds of what flowed. Ctrl-C (or --duration) stops the
// daemon cleanly, then the emulator.
import { formatActivity } from '../daemon/activity.js'
import { runDemo } from '../daemon/demo.js'
import { formatQueryResult } from './query-format.js'
import type { Command } from './command.js'
import { formatResults } from './run-summary.js'

export const demoCommand: Command = {
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
    await runDemo(
      {
        seed: Number(args.seed),
        sweepSeconds: interval,
        ...(typeof args.dir === 'string' ? { dir: args.dir } : {}),
        ...(typeof args.duration === 'number' ? { durationSeconds: args.duration } : {}),
        signal: stop.signal,
        logDestination: process.stderr,
      },
      {
        started: (e) =>
          out.write(
            `fsm-sync demo\n  emulated account: ${e.emulatorUrl} (the same API as production, in this process)\n` +
              `  daemon:           ${e.daemonUrl} (/healthz, /readyz, /metrics; webhooks at ${e.webhookPath})\n  mirror:           ${e.db}\n\n`,
          ),
        backfilled: (e) => {
          out.write(`Backfill:\n${formatResults(e.runs, e.notBuilt, { snapshot: (r) => r.snapshot })}\n`)
          for (const q of e.queries) {
            out.write(`-- ${q.title}\n${q.sql.replace(/\s+/g, ' ')};\n${formatQueryResult(q.result, 'table')}\n`)
          }
          out.write(`Query it yourself while this runs:\n  FSM_DB=${e.db} npx fsm-sync query "SELECT * FROM jobs LIMIT 5"\n\n`)
        },
        live: (e) =>
          out.write(
            `Webhooks: endpoint ${e.endpointId} delivers every event to ${e.webhookUrl}.\n` +
              `The emulated account now changes about ${e.churnPerSecond} times a second, half of it with webhooks. ` +
              `The daemon sweeps every ${e.sweepSeconds} s and reconciles every 5 minutes; every ${e.reportSeconds} s a line shows what flowed. Ctrl-C stops.\n`,
          ),
        activity: (e) => out.write(`[${new Date(e.at).toISOString().slice(11, 19)}] ${formatActivity(e.activity)}\n`),
        summary: (e) =>
          out.write(
            `\nIn ${e.seconds} s: ${e.total.received} webhooks received, ${e.total.applied} applied into the mirror; ` +
              `${e.sweeps} stream sweeps; ${e.total.changes} rows changed.\n`,
          ),
        stopped: (e) => out.write(`Stopped. The mirror stays at ${e.db}.\n`),
        teardown: () => {
          process.off('SIGINT', onSignal)
          process.off('SIGTERM', onSignal)
        },
      },
    )
    return 0
  },
}
