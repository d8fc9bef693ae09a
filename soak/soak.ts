// The soak (docs/development.md, Soak): the daemon under churn, faults, a 429 storm and random SIGKILLs, with
// an external reader on its mirror; then one sweep and one reconcile and an exact comparison with
// the emulator. Used by `npm run soak` (soak/run.ts) and, shorter, by test/soak/exact-under-churn-and-kills.test.ts.
// runSoak reads as the plan; each phase is a function below it, sharing a World (world.ts).
import { setTimeout as delay } from 'node:timers/promises'
import { maxInWindow } from '../bench/lib.js'
import { compareMirror, countBy, type Comparison, type Mismatch } from '../test/support/compare-mirror.js'
import { startReader, stop } from './processes.js'
import { STORM_AGENT, startStorm, type StormCounts } from './storm.js'
import {
  HARNESS_AGENT,
  control,
  mirrorRows,
  oneShot,
  readLog,
  ready,
  sample,
  startDaemon,
  startWorld,
  state,
  tearDown,
  until,
  type LoggedRequest,
  type Segment,
  type SoakOptions,
  type World,
} from './world.js'

export type { SoakOptions } from './world.js'

export interface SoakReport {
  seed: number
  durationMs: number
  budget: number
  churnPerSecond: number
  dir: string
  kills: number
  unexpectedExits: string[]
  churn: { done: number; errors: number }
  compared: Record<string, number>
  /** After churn stopped and the daemon alone swept and reconciled once more (cycleDone false: it did not within 3 min). */
  beforeFinalPass: { missing: number; stale: number; phantom: number; cycleDone: boolean }
  missing: number
  stale: number
  phantom: number
  /** The first mismatches after the final pass (all of them when few). */
  mismatches: Mismatch[]
  finalSync: number | null
  finalReconcile: number | null
  deliveries: { total: number; acked: number; notAcked: number; ackedLost: string[] }
  /** Inbox rows kept with a processing error, counted by error message. */
  inbox: { rows: number; errors: Record<string, number> }
  requests: {
    ours: number
    ours429: number
    ours5xxOrReset: number
    /** Most starts of one of our processes in any 60 s window (the contract's guarantee 4). */
    maxWindowOneProcess: number
    /** Most starts of the daemon in any 60 s window, killed and restarted instances together. */
    maxWindowAcrossProcesses: number
    storm: StormCounts
    logComplete: boolean
  }
  reader: { queries: number; errors: Record<string, number>; firstError: string | null }
  peakRssBytes: number
  peakWalBytes: number
  secretInOutput: boolean
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const w = await startWorld(options)
  try {
    await registerWebhooks(w)
    startSampling(w)
    await startDaemonUnderLoad(w)
    const { kills, stormCounts } = await churnWithFaults(w)
    const settled = await settle(w)
    const final = await finalPass(w)
    const deliveries = await verifyDeliveries(w)
    const requests = await requestFigures(w, stormCounts)
    const reader = await stopReader(w)
    return report(w, { kills, ...settled, ...final, ...deliveries, requests, reader })
  } finally {
    await tearDown(w)
  }
}

/** The daemon's endpoint registered upstream, once: its port stays the same across restarts. */
async function registerWebhooks(w: World): Promise<void> {
  const reg = await oneShot(w, 'register', ['webhooks', 'register', '--url', `http://127.0.0.1:${w.port}/webhooks`])
  if (reg !== 0) throw new Error(`soak: fsm-sync webhooks register failed (exit ${String(reg)}); see ${w.daemonLog}`)
}

/** Figures sampled all along: the daemon's peak RSS and the WAL's size. */
function startSampling(w: World): void {
  w.sampler = setInterval(() => sample(w), 500)
}

/** The daemon, then the external reader, the churn and the faults. */
async function startDaemonUnderLoad(w: World): Promise<void> {
  w.daemon = startDaemon(w)
  await ready(w)
  w.say('daemon ready; churn, faults and the reader start')
  w.reader = startReader(w.db)
  w.children.push(w.reader)
  await control(w, 'POST', '/churn', { ratePerSecond: w.churnPerSecond })
  await control(w, 'POST', '/faults', { route: '*', status5xxShare: 0.05, latencyMs: 20, resetShare: 0.02 })
}

/** For the soak's duration: SIGKILLs at random, a 429 storm, edits in the web app, forced 429s. */
async function churnWithFaults(w: World): Promise<{ kills: number; stormCounts: StormCounts }> {
  const D = w.durationMs
  const [killMin, killMax] = w.killEveryMs
  const t0 = Date.now()
  const stormAt = t0 + 0.35 * D
  const stormEnd = stormAt + Math.min(60_000, 0.2 * D)
  const force429At = t0 + 0.7 * D
  const appWritesAt = t0 + 0.5 * D
  let appWrites = false
  let stormCounts: StormCounts = { requests: 0, limited: 0, failed: 0 }
  let forced = false
  let kills = 0
  let nextKill = t0 + w.between(killMin, killMax)
  let lastRead = Date.now()
  while (Date.now() < t0 + D) {
    const now = Date.now()
    if (w.daemon !== undefined && w.daemon.child.exitCode !== null) {
      // It died on its own (already recorded as unexpected): bring it back like a supervisor would.
      w.daemon = startDaemon(w)
    }
    if (w.daemon !== undefined && now >= nextKill) {
      await killAndRestart(w, ++kills, now - t0)
      nextKill = Date.now() + w.between(killMin, killMax)
    }
    if (w.storm === undefined && now >= stormAt && now < stormEnd) {
      w.say('429 storm from another client on the same key')
      w.storm = startStorm(w.emu.url, w.emu.apiKey, 20)
    }
    if (w.storm !== undefined && now >= stormEnd) {
      stormCounts = await w.storm.stop()
      w.storm = undefined
    }
    if (!appWrites && now >= appWritesAt) {
      appWrites = true
      await editInTheApp(w)
    }
    if (!forced && now >= force429At) {
      forced = true
      await control(w, 'POST', '/faults', { route: 'GET /api/v1/*', force429: { count: 3, retryAfterSeconds: 4 } })
    }
    if (now - lastRead > 5_000) {
      await readLog(w)
      lastRead = now
    }
    await delay(200)
  }
  if (w.storm !== undefined) stormCounts = await w.storm.stop()
  w.storm = undefined
  return { kills, stormCounts }
}

/** SIGKILL of the running daemon, a random pause, and a new one (as a supervisor would start). */
async function killAndRestart(w: World, kill: number, atMs: number): Promise<void> {
  const d = w.daemon!
  w.daemon = undefined
  sample(w)
  d.child.kill('SIGKILL')
  await d.exited
  const pause = w.between(300, 3_000)
  w.say(`SIGKILL #${kill} at +${Math.round(atMs / 1000)} s; restart in ${Math.round(pause)} ms`)
  await delay(pause)
  w.daemon = startDaemon(w)
}

/**
 * Web-app edits made by hand, beside the churn: a deletion in every custom object (the app is the
 * only place they can be deleted; each emits object.deleted with only {id}).
 */
async function editInTheApp(w: World): Promise<void> {
  for (const slug of w.slugs) await control(w, 'POST', '/mutate', { resource: `objects/${slug}`, op: 'delete', count: 1 })
  await control(w, 'POST', '/mutate', { resource: 'invoices', op: 'delete', count: 1 })
  await control(w, 'POST', '/mutate', { resource: 'visits', op: 'update', count: 3 })
}

/**
 * Churn and faults stop; the daemon takes the last deliveries and sweeps and reconciles alone once
 * more, then stops on SIGTERM: "before the final pass" shows what it recovers itself.
 */
async function settle(w: World): Promise<{ churn: { done: number; errors: number }; daemonCycle: boolean; before: Comparison }> {
  w.say('churn and faults stop; draining')
  const churn = (await control(w, 'GET', '/churn')) as { done: number; errors: number }
  await control(w, 'POST', '/churn', { stop: true })
  await control(w, 'POST', '/faults', { clear: true })
  w.daemon ??= startDaemon(w)
  await ready(w)
  await control(w, 'POST', '/deliveries/flush')
  const rows = mirrorRows(w.db)
  await until(
    'the webhook inbox to be processed',
    () => rows(`SELECT count(*) AS n FROM webhook_inbox WHERE processed_at IS NULL AND error IS NULL`)[0]?.n === 0,
    120_000,
  )
  // One more sweep and reconciliation of every stream (a guarded reconciliation counts as done).
  const mark = Number(rows(`SELECT coalesce(max(id), 0) AS id FROM sync_runs`)[0]?.id ?? 0)
  const streams = ['clients', 'jobs', 'visits', 'invoices', ...w.slugs.map((s) => `objects:${s}`)]
  const done = (kind: string, outcomes: string) =>
    new Set(
      rows(`SELECT stream FROM sync_runs WHERE id > ? AND kind = ? AND outcome IN (${outcomes})`, mark, kind).map((r) => String(r.stream)),
    )
  let daemonCycle = true
  try {
    await until(
      'a sweep and a reconciliation of every stream by the daemon',
      () => {
        const swept = done('sweep', `'success'`)
        const reconciled = done('reconcile', `'success', 'guarded'`)
        return streams.every((s) => swept.has(s) && reconciled.has(s))
      },
      180_000,
    )
  } catch {
    daemonCycle = false
  }
  const d = w.daemon
  w.daemon = undefined
  sample(w)
  const stopped = await stop(d, 'SIGTERM', 30_000)
  if (stopped.forced) w.unexpectedExits.push(`pid ${d.pid} did not stop within 30 s of SIGTERM`)
  const before = await compareMirror((r) => state(w, r), rows, w.slugs)
  return { churn, daemonCycle, before }
}

/** One `fsm-sync sync` and one `fsm-sync reconcile`, then the exact comparison with the emulator. */
async function finalPass(w: World): Promise<{ finalSync: number | null; finalReconcile: number | null; after: Comparison }> {
  w.say('one sweep and one reconcile')
  const finalSync = await oneShot(w, 'sync', ['sync'])
  const finalReconcile = await oneShot(w, 'reconcile', ['reconcile'])
  const after: Comparison = await compareMirror((r) => state(w, r), mirrorRows(w.db), w.slugs)
  return { finalSync, finalReconcile, after }
}

/** No acknowledged delivery lost: every delivery answered 200 is in the inbox. */
async function verifyDeliveries(w: World): Promise<{ deliveries: SoakReport['deliveries']; inbox: SoakReport['inbox'] }> {
  const rows = mirrorRows(w.db)
  const deliveries = await state(w, 'deliveries')
  const inboxIds = new Set(rows(`SELECT delivery_id FROM webhook_inbox`).map((r) => String(r.delivery_id)))
  const acked = deliveries.filter((x) => x.status === 'success' && x.responseCode === 200)
  const inboxErrors: Record<string, number> = {}
  for (const e of rows(`SELECT event, error, count(*) AS n FROM webhook_inbox WHERE error IS NOT NULL GROUP BY 1, 2`)) {
    inboxErrors[`${String(e.event)}: ${String(e.error)}`] = Number(e.n)
  }
  return {
    deliveries: {
      total: deliveries.length,
      acked: acked.length,
      notAcked: deliveries.length - acked.length,
      ackedLost: acked.map((x) => String(x.id)).filter((id) => !inboxIds.has(id)),
    },
    inbox: { rows: inboxIds.size, errors: inboxErrors },
  }
}

/** Sampling stops; the rest of the request log is read and our requests are counted against the budget. */
async function requestFigures(w: World, stormCounts: StormCounts): Promise<SoakReport['requests']> {
  clearInterval(w.sampler)
  await readLog(w)
  return budgetFigures(w.log, w.segments, stormCounts, w.logComplete)
}

/** The external reader stops and prints its figures (a missing report counts as an error). */
async function stopReader(w: World): Promise<SoakReport['reader']> {
  const r = w.reader!
  w.reader = undefined
  await stop(r, 'SIGTERM')
  const readerOut = r.output().trim().split('\n').at(-1) ?? ''
  try {
    return JSON.parse(readerOut) as SoakReport['reader']
  } catch {
    return { queries: 0, errors: { NO_REPORT: 1 }, firstError: `the reader printed no report: ${r.output().slice(-500)}` }
  }
}

interface Outcome {
  kills: number
  churn: { done: number; errors: number }
  daemonCycle: boolean
  before: Comparison
  finalSync: number | null
  finalReconcile: number | null
  after: Comparison
  deliveries: SoakReport['deliveries']
  inbox: SoakReport['inbox']
  requests: SoakReport['requests']
  reader: SoakReport['reader']
}

/** The phases' outcomes as the report (soak/report.ts formats it). */
function report(w: World, o: Outcome): SoakReport {
  return {
    seed: w.seed,
    durationMs: w.durationMs,
    budget: w.budget,
    churnPerSecond: w.churnPerSecond,
    dir: w.dir,
    kills: o.kills,
    unexpectedExits: w.unexpectedExits,
    churn: { done: o.churn.done, errors: o.churn.errors },
    compared: o.after.compared,
    beforeFinalPass: {
      missing: countBy(o.before.mismatches, 'missing'),
      stale: countBy(o.before.mismatches, 'stale'),
      phantom: countBy(o.before.mismatches, 'phantom'),
      cycleDone: o.daemonCycle,
    },
    missing: countBy(o.after.mismatches, 'missing'),
    stale: countBy(o.after.mismatches, 'stale'),
    phantom: countBy(o.after.mismatches, 'phantom'),
    mismatches: o.after.mismatches.slice(0, 20),
    finalSync: o.finalSync,
    finalReconcile: o.finalReconcile,
    deliveries: o.deliveries,
    inbox: o.inbox,
    requests: o.requests,
    reader: o.reader,
    peakRssBytes: w.peakRssBytes,
    peakWalBytes: w.peakWalBytes,
    secretInOutput: w.outputs.some((out) => out.includes(w.emu.apiKey)),
  }
}

/** Our requests (not the storm's, not the harness's) and the most of them in any 60 s window. */
function budgetFigures(
  log: readonly LoggedRequest[],
  segments: readonly Segment[],
  storm: StormCounts,
  logComplete: boolean,
): SoakReport['requests'] {
  const ours = log.filter((e) => e.userAgent !== STORM_AGENT && e.userAgent !== HARNESS_AGENT)
  const sorted = [...segments].sort((a, b) => a.start - b.start)
  const byProcess = new Map<number, number[]>()
  // Every process of ours in turn (the daemon across its restarts, then the final sync and
  // reconcile): they share the key and the mirror, so together they must keep the budget.
  const daemonStarts: number[] = []
  for (const e of ours) {
    const t = Date.parse(e.startedAt)
    // A request belongs to the last of our processes started before it arrived (they never overlap).
    const seg = sorted.filter((s) => s.start <= t).at(-1) ?? sorted[0]
    if (seg === undefined) continue
    const list = byProcess.get(seg.pid) ?? []
    list.push(t)
    byProcess.set(seg.pid, list)
    daemonStarts.push(t)
  }
  return {
    ours: ours.length,
    ours429: ours.filter((e) => e.status === 429).length,
    ours5xxOrReset: ours.filter((e) => e.status === 0 || e.status >= 500).length,
    maxWindowOneProcess: Math.max(0, ...[...byProcess.values()].map((times) => maxInWindow(times, 60_000))),
    maxWindowAcrossProcesses: maxInWindow(daemonStarts, 60_000),
    storm,
    logComplete,
  }
}
