// `fsm-sync status [--json]`: per stream cursor, last success and error, rows, lag; the budget.
import type { Command } from './command.js'
import { explainMirrorError, openMirror } from '../store/mirror-database.js'
import { schedulesOff } from '../config/index.js'
import { statusReport, type StatusReport } from '../store/status-report.js'
import { consumerLag, type ConsumerLag } from '../store/change-log-consumers.js'
import { POSTGRES_CONSUMER } from '../destination/index.js'
import { STATUS_STREAMS } from '../../connectors/status-streams.js'

export const statusCommand: Command = {
  command: 'status',
  describe: 'Per stream: table, rows, cursor, last success, last error, lag; inbox backlog; request budget; schedules off',
  builder: (y) => y.option('json', { type: 'boolean', default: false, describe: 'print JSON for scripts' }),
  run: async (args, ctx) => {
    const config = ctx.config()
    const mirror = await openMirror(config.db, { readonly: true })
    try {
      let read
      try {
        read = statusReport(mirror.sqlite, Date.now(), STATUS_STREAMS)
      } catch (err) {
        // A corrupt or truncated mirror: one line naming the file, the cause and the fix.
        throw explainMirrorError(config.db, err)
      }
      const report: StatusReport = { ...read, schedulesOff: schedulesOff(config.schedules) }
      const destination = destinationStatus(mirror.sqlite, config.destination.postgres)
      if (args.json === true)
        ctx.io.stdout.write(JSON.stringify({ ...report, budgetPerMinute: config.rateLimit, destination }, null, 2) + '\n')
      else ctx.io.stdout.write(render(report, config.rateLimit) + renderDestination(destination))
      return 0
    } finally {
      await mirror.close()
    }
  },
}

function render(report: StatusReport, budget: number): string {
  const head = ['stream', 'table', 'rows', 'deleted', 'last success', 'lag', 'cursor', 'last error']
  const rows = report.streams.map((s) => [
    s.stream,
    s.table ?? '',
    s.rows === null ? '' : String(s.rows),
    s.deleted === null ? '' : String(s.deleted),
    s.lastSuccessAt ?? 'never',
    s.lagSeconds === null ? '' : `${s.lagSeconds} s`,
    cursorText(s.cursor),
    s.lastError === null ? '' : `${s.lastErrorAt ?? ''} ${s.lastError}`.slice(0, 100),
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  const out = [
    line(head),
    ...rows.map(line),
    '',
    `request budget: ${report.requestsLastMinute} of ${budget} in the last 60 s (recorded by runs)`,
  ]
  if (report.webhookInbox !== null)
    out.push(
      `webhook inbox: ${report.webhookInbox.backlog} waiting, ${report.webhookInbox.failed} failed, ${report.webhookInbox.skipped} skipped (stream not selected)`,
    )
  if (report.schedulesOff !== undefined && report.schedulesOff.length > 0)
    out.push(`schedules off: ${report.schedulesOff.join(', ')} (they run only when asked)`)
  return out.join('\n') + '\n'
}

type DestinationReport = (Partial<ConsumerLag> & { kind: 'postgres'; schema: string; configured: boolean }) | null

/** The Postgres destination's position as its daemon last recorded it in the mirror; null when there is none. */
function destinationStatus(
  sqlite: Parameters<typeof consumerLag>[0],
  settings: { url?: string | undefined; schema: string },
): DestinationReport {
  // A mirror from before change_log_consumers, opened read-only, has no such table yet.
  let lag: ConsumerLag | undefined
  try {
    lag = consumerLag(sqlite, POSTGRES_CONSUMER, Date.now())
  } catch {
    lag = undefined
  }
  const configured = settings.url !== undefined
  if (!configured && lag === undefined) return null
  return { kind: 'postgres', schema: settings.schema, configured, ...(lag ?? {}) }
}

function renderDestination(d: DestinationReport): string {
  if (d === null) return ''
  if (d.seq === undefined) return `destination postgres (schema ${d.schema}): not replicated yet (fsm-sync run or fsm-sync replicate)\n`
  const error = d.lastError === null || d.lastError === undefined ? '' : `; last error at ${d.lastErrorAt ?? '?'}: ${d.lastError}`
  const off = d.configured ? '' : ' (no longer configured: FSM_POSTGRES_URL is unset)'
  return `destination postgres (schema ${d.schema})${off}: ${d.lagChanges ?? 0} changes behind (${d.lagSeconds ?? 0} s), at change ${d.seq}${error}\n`
}

function cursorText(cursor: string | null): string {
  if (cursor === null) return ''
  try {
    const c = JSON.parse(cursor) as { since?: unknown }
    return typeof c.since === 'string' ? c.since : cursor.slice(0, 40)
  } catch {
    return cursor.slice(0, 40)
  }
}
