// The checks of `fsm-sync doctor`, one result each, with the fix for what fails. Each API check
// is one GET that changes nothing upstream; the client retries nothing here, so an unreachable
// address answers at once. Messages never contain the key (errors.ts guarantees it).
import { statSync } from 'node:fs'
import { ApiClient } from '../api/api-client.js'
import { ApiError, ForbiddenError, NetworkError, UnauthorizedError } from '../api/errors.js'
import { RequestGovernor } from '../api/governor/index.js'
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { MirrorError, explainMirrorError, openMirror, type Mirror, type Sqlite } from '../store/sqlite/mirror-database.js'
import { quickCheck } from '../store/sqlite/mirror-health.js'
import { selectStreams } from '../../connectors/selection.js'
import { SecretStore } from '../webhooks/secret-store.js'
import { customObjects } from '../../connectors/custom-objects.js'
import { createApiAccess } from './api-access.js'
import { probeMirror } from './mirror-probe.js'

export interface Check {
  ok: boolean
  label: string
  /** What was found, or what to do when it failed. */
  detail: string
  /** An optional feature that is not set up: shown with how to set it up, never a failure (ok is true). */
  note?: true
}

/** One GET per enabled stream (and the integrations the daemon triggers), with the scope it needs. */
export function scopeProbes(config: Config): { label: string; path: string; query?: Record<string, string> }[] {
  const sel = selectStreams(config.streams)
  const probes: { label: string; path: string; query?: Record<string, string> }[] = sel.records.map((s) => ({
    label: `${s.scope} (${s.name})`,
    path: s.route,
    query: { limit: '1' },
  }))
  if (sel.objects !== undefined) probes.push({ label: `${customObjects.scope} (objects)`, path: customObjects.discoveryRoute })
  for (const m of sel.metadata) if (m.scope !== undefined) probes.push({ label: `${m.scope} (${m.name})`, path: m.list.route })
  for (const r of sel.reference) probes.push({ label: `legacy route ${r.route} (${r.name})`, path: r.route })
  probes.push({ label: 'integrations:write (scheduled triggers)', path: '/api/v1/integrations/calendar-a/status' })
  return probes
}

export async function apiChecks(config: Config & { baseUrl: string; apiKey: string }, logger: Logger): Promise<Check[]> {
  // The checks spend the key's budget like any command: counted in the mirror's shared window, so a
  // daemon running beside stays within the limit. A mirror that does not open is mirrorChecks'
  // finding; the checks then run on this process's budget alone.
  let mirror: Mirror | undefined
  try {
    mirror = await openMirror(config.db, { mode: config.dbMode })
  } catch {
    mirror = undefined
  }
  const retryPolicy = { maxRetries: 0, delaysMs: [], maxDelayMs: 0 }
  // Pacing (one start per spacing, about 1 s at 60/min) keeps a daemon's follow-ups from waiting a
  // minute; doctor has none, so its few GETs go back to back, up to half the limit (a run again
  // right after counts the first one's), leaving the rest of the window to a daemon beside.
  const burst = Math.max(2, Math.floor(config.rateLimit / 2))
  const access = { maxInFlight: 1, retryPolicy, connectTimeoutMaxMs: 5000, headersTimeoutMaxMs: 10_000, burst }
  const client =
    mirror === undefined
      ? new ApiClient({
          baseUrl: config.baseUrl,
          apiKey: config.apiKey,
          governor: new RequestGovernor({ limitPerMinute: config.rateLimit, maxInFlight: 1, burst }),
          logger,
          retryPolicy,
          timeouts: {
            connectMs: Math.min(config.http.connectTimeoutMs, 5000),
            headersMs: Math.min(config.http.headersTimeoutMs, 10_000),
            bodyMs: config.http.bodyTimeoutMs,
            deadlineMs: config.http.requestDeadlineMs,
          },
        })
      : createApiAccess(config, logger, mirror.sqlite, access).client
  const checks: Check[] = []
  try {
    // The key routes check no scope (spec: API keys), so they test the key alone.
    try {
      await client.get('/api/v1/api-keys', undefined, { priority: 'sweep' })
      checks.push({ ok: true, label: 'FSM_BASE_URL reachable', detail: config.baseUrl })
      checks.push({ ok: true, label: 'FSM_API_KEY valid', detail: 'accepted' })
    } catch (err) {
      if (err instanceof NetworkError) {
        checks.push({
          ok: false,
          label: 'FSM_BASE_URL reachable',
          detail: `${err.message}. Check the address (${config.baseUrl}), DNS, proxies and firewalls`,
        })
        return checks
      }
      checks.push({ ok: true, label: 'FSM_BASE_URL reachable', detail: config.baseUrl })
      if (err instanceof UnauthorizedError)
        checks.push({
          ok: false,
          label: 'FSM_API_KEY valid',
          detail: 'rejected (401): the key is invalid, revoked or expired; create a new one in the account settings',
        })
      else checks.push({ ok: false, label: 'FSM_API_KEY valid', detail: (err as Error).message })
      return checks
    }
    for (const probe of scopeProbes(config)) {
      try {
        await client.get(probe.path, probe.query, { priority: 'sweep' })
        checks.push({ ok: true, label: probe.label, detail: 'granted' })
      } catch (err) {
        if (err instanceof ApiError && err.apiCode === 'INTEGRATION_NOT_CONNECTED')
          checks.push({ ok: true, label: probe.label, detail: 'granted (calendar-a is not connected: its trigger will report that)' })
        else if (err instanceof ForbiddenError)
          checks.push({
            ok: false,
            label: probe.label,
            detail: `missing scope ${err.missingScope ?? '(not named)'}: add it to the key or create a key that has it`,
          })
        else checks.push({ ok: false, label: probe.label, detail: (err as Error).message })
      }
    }
    return checks
  } finally {
    await client.close()
    await mirror?.close()
  }
}

export async function mirrorChecks(config: Config): Promise<Check[]> {
  let mirror
  try {
    mirror = await openMirror(config.db, { mode: config.dbMode })
  } catch (err) {
    // A MirrorError about the file already names it, what is wrong and the fix.
    const known =
      err instanceof MirrorError && (err.code === 'MIRROR_CORRUPT' || err.code === 'MIRROR_UNREADABLE' || err.code === 'MIGRATION_FAILED')
    return [
      {
        ok: false,
        label: 'mirror writable, migrations applied',
        detail: known ? err.message : `${(err as Error).message}. Check FSM_DB and that its folder is writable by this user`,
      },
    ]
  }
  try {
    const probe = await probeMirror(mirror.sqlite, config.webhooks.maxBodyBytes)
    const checks: Check[] = [
      probe.ok
        ? { ok: true, label: 'mirror writable, migrations applied', detail: `${config.db} (${probe.migrations} migrations)` }
        : { ok: false, label: 'mirror writable, migrations applied', detail: `${config.db}: ${probe.reason}` },
      integrity(mirror.sqlite, config.db),
    ]
    const store = SecretStore.forMirror(config.db)
    let stored
    try {
      stored = store.current()
    } catch (err) {
      checks.push({ ok: false, label: 'webhook secret', detail: explainMirrorError(config.db, err).message })
      return checks
    }
    const mode = secretsFileMode(store.file)
    if (mode !== undefined && (mode & 0o077) !== 0) {
      checks.push({
        ok: false,
        label: 'webhook secrets file readable by its owner only',
        detail: `${store.file} has mode 0${mode.toString(8)}: run \`chmod 600 ${store.file}\``,
      })
    }
    if (config.webhookSecrets.length > 0)
      checks.push({ ok: true, label: 'webhook secret', detail: `${config.webhookSecrets.length} in FSM_WEBHOOK_SECRETS` })
    else if (stored !== undefined)
      checks.push({ ok: true, label: 'webhook secret', detail: `stored for endpoint ${stored.endpointId} (${stored.url})` })
    else
      checks.push({
        ok: true,
        note: true,
        label: 'webhook secret',
        detail:
          'none (webhooks are optional: without them changes arrive with the next sweep). To receive them, run `fsm-sync webhooks register --url https://<this host>/webhooks`, or set FSM_WEBHOOK_SECRETS',
      })
    return checks
  } finally {
    await mirror.close()
  }
}

function secretsFileMode(file: string): number | undefined {
  const st = statSync(file, { throwIfNoEntry: false })
  return st === undefined ? undefined : st.mode & 0o777
}

/**
 * PRAGMA quick_check: every page of every table and index read and checked (not the cross-checks of
 * integrity_check, which take much longer on a large mirror). Pages that do not read back say
 * "corrupt", which no change of folder permissions would fix.
 */
function integrity(sqlite: Sqlite, file: string): Check {
  const label = 'mirror intact (quick_check)'
  let problems: string[]
  try {
    problems = quickCheck(sqlite, 5)
  } catch (err) {
    return { ok: false, label, detail: explainMirrorError(file, err).message }
  }
  if (problems.length === 0) return { ok: true, label, detail: 'ok' }
  return {
    ok: false,
    label,
    detail: `the mirror ${file} is corrupt (${problems.join('; ').slice(0, 300)}): restore it from a backup, or move it aside and run \`fsm-sync sync\` to build a new one (then \`fsm-sync webhooks register\` again)`,
  }
}
