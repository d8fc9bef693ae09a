// One line of state per account, read from its mirror alone and read-only (it may run beside the
// daemon): `fsm-sync accounts` and `fsm-sync status` over several accounts. A mirror that is missing
// or cannot be read is a state of its account, never an end of the listing.
import { existsSync } from 'node:fs'
import type { AccountConfig } from '../config/index.js'
import { formatDuration } from '../model/backfill-estimate.js'
import { parseInstant } from '../model/timestamps.js'
import { explainMirrorError, openMirror } from '../store/sqlite/mirror-database.js'
import { accountActivity, statusReport, type AccountActivity, type StreamStatus } from '../store/read-models/status-report.js'
import { mirrorUse } from '../store/read-models/mirror-use.js'
import { STATUS_STREAMS } from './status-streams.js'

/**
 * `ok`: synced, no stream's last run failed. `failing`: a stream's last error is newer than its last
 * success. `syncing`: the first sync is under way. `never synced`: no mirror yet, or nothing ever
 * succeeded in it. `unreadable`: the mirror cannot be read (corrupt, not a mirror, no permission).
 */
export type AccountState = 'ok' | 'failing' | 'syncing' | 'never synced' | 'unreadable'

export interface AccountSummary {
  id: string
  db: string
  state: AccountState
  /** Why the state is not `ok`, in a few words (the mirror's error when unreadable). */
  detail: string | null
  lastSweep: AccountActivity['lastSweep']
  /** The largest expected staleness of its streams, in seconds (status-report.ts). */
  stalenessSeconds: number | null
  /** The newest error still standing on a stream (newer than the stream's last success). */
  lastError: { stream: string; at: string; message: string } | null
  budget: { requestsLastMinute: number | null; perMinute: number }
  webhooks: { backlog: number; failed: number; lastDeliveryAt: string | null } | null
  /** The destination that moved or failed last, when one is recorded in the mirror. */
  destination: { name: string; lagChanges: number; lagSeconds: number; lastError: string | null } | null
}

/** Whether a listing with these states should exit 1 (docs/commands.md, `accounts`). */
export function anyFailing(summaries: readonly AccountSummary[]): boolean {
  if (summaries.some((s) => s.state === 'failing' || s.state === 'unreadable')) return true
  // Every mirror never synced: the wrong data folder or volume, as `status` says of one mirror.
  return summaries.length > 0 && summaries.every((s) => s.state === 'never synced')
}

export async function accountSummary(account: AccountConfig, now: number): Promise<AccountSummary> {
  const { id, config } = account
  const empty = {
    id,
    db: config.db,
    lastSweep: null,
    stalenessSeconds: null,
    lastError: null,
    budget: { requestsLastMinute: null, perMinute: config.rateLimit },
    webhooks: null,
    destination: null,
  }
  if (!existsSync(config.db)) return { ...empty, state: 'never synced', detail: 'no mirror yet' }
  let mirror
  try {
    mirror = await openMirror(config.db, { readonly: true })
  } catch (err) {
    return { ...empty, state: 'unreadable', detail: explainMirrorError(config.db, err).message }
  }
  try {
    const report = statusReport(mirror.sqlite, now, STATUS_STREAMS)
    const activity = accountActivity(mirror.sqlite, now)
    const history = mirrorUse(mirror.sqlite)
    const standing = report.streams.filter(errorStands).sort((a, b) => (a.lastErrorAt! < b.lastErrorAt! ? 1 : -1))
    const newest = standing[0]
    const stalest = Math.max(...report.streams.map((s) => s.stalenessSeconds ?? -1))
    const dest = report.destinations[0]
    const state: AccountState =
      standing.length > 0 ? 'failing' : history.synced ? 'ok' : report.running.length > 0 ? 'syncing' : 'never synced'
    return {
      ...empty,
      state,
      detail:
        state === 'failing'
          ? `${standing.length} stream(s) failing: ${standing.map((s) => s.stream).join(', ')}`
          : state === 'never synced'
            ? 'nothing synced yet'
            : null,
      lastSweep: activity.lastSweep,
      stalenessSeconds: stalest < 0 ? null : stalest,
      lastError: newest === undefined ? null : { stream: newest.stream, at: newest.lastErrorAt!, message: newest.lastError! },
      budget: { requestsLastMinute: activity.requestsLastMinute, perMinute: config.rateLimit },
      webhooks:
        report.webhookInbox === null
          ? null
          : { backlog: report.webhookInbox.backlog, failed: report.webhookInbox.failed, lastDeliveryAt: activity.lastDeliveryAt },
      destination:
        dest === undefined
          ? null
          : { name: dest.name, lagChanges: dest.lagChanges, lagSeconds: dest.lagSeconds, lastError: dest.lastError },
    }
  } catch (err) {
    return { ...empty, state: 'unreadable', detail: explainMirrorError(config.db, err).message }
  } finally {
    await mirror.close()
  }
}

/** A stream whose last error came after its last success (or that never succeeded). */
function errorStands(s: StreamStatus): boolean {
  if (s.lastError === null || s.lastErrorAt === null) return false
  return s.lastSuccessAt === null || parseInstant(s.lastErrorAt) > parseInstant(s.lastSuccessAt)
}

export type Column = 'account' | 'state' | 'last sweep' | 'staleness' | 'requests' | 'webhooks' | 'destination lag' | 'last error'

/** A table of `columns`, one row per account; the timestamps are in --json. */
export function renderSummaries(summaries: readonly AccountSummary[], columns: readonly Column[], now: number): string {
  const cell: Record<Column, (s: AccountSummary) => string> = {
    account: (s) => s.id,
    state: (s) => s.state,
    'last sweep': (s) => (s.lastSweep === null ? 'never' : `${ago(s.lastSweep.endedAt, now)} (${s.lastSweep.outcome})`),
    staleness: (s) => (s.stalenessSeconds === null ? '' : `~${formatDuration(Math.round(s.stalenessSeconds))}`),
    requests: (s) => (s.budget.requestsLastMinute === null ? '' : `${s.budget.requestsLastMinute} of ${s.budget.perMinute}/min`),
    webhooks: (s) =>
      s.webhooks === null
        ? ''
        : `${s.webhooks.backlog} waiting${s.webhooks.failed > 0 ? `, ${s.webhooks.failed} failed` : ''}, last ${s.webhooks.lastDeliveryAt === null ? 'never' : ago(s.webhooks.lastDeliveryAt, now)}`,
    'destination lag': (s) =>
      s.destination === null
        ? ''
        : `${s.destination.lagChanges} changes (${formatDuration(s.destination.lagSeconds)})${s.destination.lastError === null ? '' : ', erring'}`,
    'last error': (s) =>
      (s.state === 'unreadable' || s.lastError === null
        ? (s.detail ?? '')
        : `${ago(s.lastError.at, now)} ${s.lastError.stream}: ${s.lastError.message}`
      ).slice(0, 100),
  }
  const rows = summaries.map((s) => columns.map((c) => cell[c](s)))
  const widths = columns.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()
  return [line(columns), ...rows.map(line)].join('\n') + '\n'
}

function ago(at: string, now: number): string {
  return `${formatDuration(Math.max(0, Math.round((now - parseInstant(at)) / 1000)))} ago`
}
