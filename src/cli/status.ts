// `fsm-sync status [--json]`: per stream rows, last success, sweep and error, staleness and cursor;
// runs in progress and the backfill estimate they stored (docs/sweeping.md, Progress); the budget.
// On a mirror nothing was ever synced into it still shows what the runs recorded (why they failed),
// and says so on stderr with exit 1; with no mirror file at all, only the message (require-synced.ts).
// With several accounts and no --account: one line per account (accounts.ts).
import { existsSync } from 'node:fs'
import type { Command } from './command.js'
import { explainMirrorError, openMirror } from '../store/sqlite/mirror-database.js'
import { systemClock } from '../model/clock.js'
import { schedulesOff } from '../config/index.js'
import { packageInfo } from '../config/package-info.js'
import { count, formatDuration, formatEstimate, plural } from '../model/backfill-estimate.js'
import { statusReport, type RunningStatus, type StatusReport } from '../store/read-models/status-report.js'
import { parseInstant } from '../model/timestamps.js'
import { jsonOption, printResult } from './output.js'
import { coversEvery } from './account-choice.js'
import { neverSyncedError, noMirrorError, readMirrorUse } from './require-synced.js'
import type { ConsumerLag } from '../store/repositories/change-log-consumers.js'
import { destinationConsumerName, POSTGRES_CONSUMER } from '../destination/consumer-name.js'
import { STATUS_STREAMS } from './status-streams.js'

export const statusCommand: Command = {
  builder: (y) => jsonOption(y),
  run: async (args, ctx) => {
    // Several accounts and none named: one line each (accounts.ts).
    if (coversEvery(ctx.accounts(), args.account)) return (await import('./accounts.js')).statusOfEvery(args, ctx)
    const config = ctx.config()
    if (!existsSync(config.db)) throw noMirrorError(config.db)
    const mirror = await openMirror(config.db, { readonly: true })
    try {
      let read
      const now = systemClock.now()
      try {
        read = statusReport(mirror.sqlite, now, STATUS_STREAMS)
      } catch (err) {
        // A corrupt or truncated mirror: one line naming the file, the cause and the fix.
        throw explainMirrorError(config.db, err)
      }
      const history = readMirrorUse(config.db, mirror.sqlite)
      const report: StatusReport = { ...read, schedulesOff: schedulesOff(config.schedules) }
      const destination = destinationStatus(report.destinations, config.destination.postgres)
      // `version`: the release reading the mirror (docs/deployment.md, Upgrading); `synced`: see require-synced.ts.
      const doc = { version: packageInfo().version, synced: history.synced, ...report, budgetPerMinute: config.rateLimit, destination }
      printResult(args, ctx.io, doc, () => render(report, config.rateLimit, now) + renderDestinations(destination, report.destinations))
      if (history.synced) return 0
      ctx.io.stderr.write(`fsm-sync: ${neverSyncedError(config.db, history).message}\n`)
      return 1
    } finally {
      await mirror.close()
    }
  },
}

function render(report: StatusReport, budget: number, now: number): string {
  // Three time columns, each an age or a span in one format (formatDuration); the timestamps are in --json.
  const head = ['stream', 'table', 'rows', 'deleted', 'last success', 'swept to end', 'staleness', 'cursor', 'last error']
  const rows = report.streams.map((s) => [
    s.stream,
    s.table ?? '',
    s.rows === null ? '' : count(s.rows),
    s.deleted === null ? '' : count(s.deleted),
    ago(s.lastSuccessAt, now),
    ago(s.lastSweptAt, now),
    s.stalenessSeconds === null ? '' : `~${formatDuration(Math.round(s.stalenessSeconds))}`,
    cursorText(s.cursor),
    s.lastError === null ? '' : `${ago(s.lastErrorAt, now)}: ${s.lastError}`.slice(0, 100),
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
    'last success: when a run of the stream last succeeded; swept to end: when a sweep last read it to the end.',
    'staleness: expected time for a change made without a webhook to reach the mirror (from the recent sweeps).',
    'cursor: where the next sweep starts reading.',
    `request budget: ${report.requestsLastMinute} of ${budget} in the last minute (recorded by runs)`,
  ]
  if (report.running.length > 0) out.push('', 'in progress:', ...report.running.map((r) => `  ${runningText(r, now)}`))
  if (report.backfill !== null) out.push(`backfill left: ${formatEstimate(report.backfill)}`)
  if (report.webhookInbox !== null)
    out.push(
      `webhook inbox: ${report.webhookInbox.backlog} waiting, ${report.webhookInbox.failed} failed, ${report.webhookInbox.skipped} skipped (stream not selected)`,
    )
  if (report.schedulesOff !== undefined && report.schedulesOff.length > 0)
    out.push(`schedules off: ${report.schedulesOff.join(', ')} (they run only when asked)`)
  return out.join('\n') + '\n'
}

/** `45s ago`, `1h02m ago`, or `never`. */
function ago(at: string | null | undefined, now: number): string {
  if (at === null || at === undefined) return 'never'
  return `${formatDuration(Math.max(0, Math.round((now - parseInstant(at)) / 1000)))} ago`
}

type DestinationReport = (Partial<ConsumerLag> & { kind: 'postgres'; schema: string | null; configured: boolean }) | null

/**
 * The Postgres destination as it last recorded itself in the mirror: the configured one when this
 * shell has its URL, else the one that moved or failed last (a daemon elsewhere replicates); null when none.
 */
function destinationStatus(
  destinations: readonly ConsumerLag[],
  settings: { url?: string | undefined; schema: string },
): DestinationReport {
  if (settings.url === undefined) {
    const last = destinations[0]
    return last === undefined ? null : { kind: 'postgres', configured: false, ...last }
  }
  // Its row is named after the configured target; a mirror the destination has not run on since the
  // per-target names still has the one name older releases used.
  const name = destinationConsumerName(settings.url, settings.schema)
  const lag = destinations.find((d) => d.name === name) ?? destinations.find((d) => d.name === POSTGRES_CONSUMER)
  return { kind: 'postgres', configured: true, ...lag, schema: settings.schema }
}

function renderDestinations(d: DestinationReport, all: readonly ConsumerLag[]): string {
  if (d === null) return ''
  if (d.seq === undefined) return `destination postgres (schema ${d.schema}): not replicated yet (fsm-sync run or fsm-sync replicate)\n`
  return [d as ConsumerLag, ...all.filter((o) => o.name !== d.name)].map(destinationLine).join('')
}

function destinationLine(d: ConsumerLag): string {
  const where = [d.target, d.schema === null ? undefined : `schema ${d.schema}`].filter((p) => p != null).join(', ')
  const error = d.lastError === null ? '' : `; last error at ${d.lastErrorAt ?? '?'}: ${d.lastError}`
  const load = d.loadedAt === null ? '; never loaded (holds no changes back)' : `; last load ${d.loadedAt}`
  const applied = d.appliedAt === null ? '' : `, last applied ${d.appliedAt}`
  return `destination postgres (${where || d.name}): ${d.lagChanges} changes behind (${formatDuration(d.lagSeconds)}), at change ${d.seq}${load}${applied}${error}\n`
}

/** `clients sweep (backfill): running 42 s; 1,200 rows read, 1,180 changed, 12 requests; ~4,800 rows left (~48 requests); last page 3 s ago`. */
function runningText(r: RunningStatus, now: number): string {
  const p = r.progress
  const head = `${r.stream} ${r.kind}${p?.backfill === true ? ' (backfill)' : ''}: running ${formatDuration(r.runningSeconds)}`
  if (r.ownerGone)
    return `${head}; its process is gone (${r.ownerSilentSeconds === null ? 'no owner recorded' : `no heartbeat for ${formatDuration(r.ownerSilentSeconds)}`}): the next sync or daemon start resumes the stream from its checkpoint`
  if (p === null) return head
  const left =
    p.rowsRemaining === null || p.requestsRemaining === null
      ? 'rows left not known yet'
      : `~${plural(p.rowsRemaining, 'row')} left (~${plural(p.requestsRemaining, 'request')})`
  return `${head}; ${plural(p.rowsRead, 'row')} read, ${count(p.rowsChanged)} changed, ${plural(p.requests, 'request')}; ${left}; progress written ${ago(p.at, now)}`
}

/**
 * A cursor as a person reads it: `since <instant>` for a keyset or a custom object's bookmark, `walk
 * under way` for a custom object mid-walk, the scalar fields of any other object, never cut JSON.
 */
export function cursorText(cursor: string | null): string {
  if (cursor === null) return ''
  let c: unknown
  try {
    c = JSON.parse(cursor)
  } catch {
    return short(cursor)
  }
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return short(String(c))
  const o = c as Record<string, unknown>
  const since = typeof o.since === 'string' ? o.since : typeof o.updatedSince === 'string' ? o.updatedSince : undefined
  if (o.next !== undefined) return since === undefined ? 'first walk under way' : `walk under way, since ${instant(since)}`
  if (since !== undefined) return `since ${instant(since)}`
  const fields = Object.entries(o).filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v))
  return fields.length === 0 ? '' : short(fields.map(([k, v]) => `${k} ${String(v)}`).join(', '))
}

/** `2026-01-03T10:00:00Z`: an instant without its milliseconds when they are zero. */
function instant(iso: string): string {
  return iso.replace(/\.000Z$/, 'Z')
}

function short(text: string): string {
  return text.length <= 40 ? text : `${text.slice(0, 39)}…`
}
