// Sharded takeover: three replicas of `fsm-sync run` (FSM_SHARDING=on, child processes) share
// FSM_BENCH_ACCOUNTS (300) accounts of about FSM_BENCH_ROWS (2,000) records on one multi-account
// emulator, coordinated through a real embedded Postgres server that is also their warehouse. Once
// every account is backfilled and replicated, one replica is SIGKILLed; measured: when each orphaned
// account is owned again and has swept every stream, the upstream requests its takeover spent (the
// emulator's log), the staleness of web-app changes made on orphans at the kill, every key's budget.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { assign } from '../src/coordination/rendezvous.js'
import { createDatabase, startPostgres } from '../test/support/postgres-server.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { atMost, maxInWindow, type BenchResult, type Figure } from './lib.js'
import * as m from './many-accounts-lib.js'
import * as s from './sharded-takeover-lib.js'

const N = Number(process.env.FSM_BENCH_ACCOUNTS ?? 300)
const ROWS = Number(process.env.FSM_BENCH_ROWS ?? 2000)
const LEASE_SECONDS = Number(process.env.FSM_BENCH_LEASE_SECONDS ?? 15)
/** Web-app changes made on orphaned accounts just after the kill (one each, on as many orphans). */
const CHANGED = Number(process.env.FSM_BENCH_CHANGED ?? 20)
const SETTLE_SECONDS = Number(process.env.FSM_BENCH_SETTLE_SECONDS ?? 90)
/** The windows compared for a takeover's extra requests: this long from the new lease, and as long before the kill. */
const WINDOW_SECONDS = Math.min(SETTLE_SECONDS, Number(process.env.FSM_BENCH_WINDOW_SECONDS ?? 60))
const STEADY_TIMEOUT_SECONDS = Number(process.env.FSM_BENCH_STEADY_TIMEOUT ?? 3600)
const TAKEOVER_TIMEOUT_SECONDS = Number(process.env.FSM_BENCH_TAKEOVER_TIMEOUT ?? 1800)
/** Once every orphan sweeps again: how long more to wait for the changes to reach the warehouse. */
const WAREHOUSE_WAIT_SECONDS = Number(process.env.FSM_BENCH_WAREHOUSE_WAIT ?? 120)
const REPLICAS = ['r1', 'r2', 'r3']
const VICTIM = 'r3'
const STREAMS = ['clients', 'jobs', 'visits', 'invoices', 'objects:equipment', 'objects:inspections']
const MiB = 2 ** 20
const r1 = (x: number) => Math.round(x * 10) / 10
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join('/')
const log = (msg: string) => process.stdout.write(`  [${new Date().toISOString().slice(11, 19)}] ${msg}\n`)

interface Orphan {
  id: string
  owner?: string
  ownedAt?: number
  sweptAt?: number
  /** The end of the reconciliation its new owner runs after a restore, when it runs one. */
  reconciledAt?: number
  owners: Set<string>
}

interface Change {
  id: string
  jobId: string
  updatedAt: string
  writtenAt: number
  seenAt?: number
  inWarehouseAt?: number
}

export default async function shardedTakeover(): Promise<BenchResult> {
  const loadAtStart = load()
  const dir = tempDir('fsm-bench-sharded-')
  const server = await startPostgres()
  const url = await createDatabase(server.url, 'fsm_bench_sharded')
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  // An idle connection ended by the server's stop must not end the bench.
  pool.on('error', () => undefined)
  const t00 = Date.now()
  const emu = await m.startEmulatorChild(N, ROWS)
  log(`emulator: ${N} accounts of about ${ROWS} rows in ${r1((Date.now() - t00) / 1000)} s; Postgres started`)
  mkdirSync(path.join(dir, 'keys'), { recursive: true, mode: 0o700 })
  for (const a of emu.accounts) writeFileSync(path.join(dir, 'keys', a.id), `${a.apiKey}\n`, { mode: 0o600 })
  const config = path.join(dir, 'config.json')
  writeFileSync(
    config,
    JSON.stringify({
      baseUrl: emu.url,
      destination: { postgres: { url } },
      sharding: { enabled: 'on', leaseSeconds: LEASE_SECONDS },
      accounts: emu.accounts.map((a) => ({ id: a.id, apiKeyFile: path.join(dir, 'keys', a.id) })),
    }),
  )
  const ids = emu.accounts.map((a) => a.id)
  const byId = new Map(emu.accounts.map((a) => [a.id, a]))
  const wanted = assign(ids, REPLICAS)
  const replicas = new Map<string, s.Replica>()
  // The three names are registered first, so the initial owners are final and no account is
  // handed over (nor restored from the warehouse) before the kill.
  const stopHeartbeats = await s.preRegister(pool, REPLICAS)
  const started = Date.now()
  for (const name of REPLICAS)
    replicas.set(name, s.startReplica(name, path.join(dir, name), { FSM_CONFIG: config, FSM_HTTP_HOST: '127.0.0.1', FSM_HTTP_PORT: '0' }))
  const mirrors = new s.MirrorFiles()
  const figures: Figure[] = []
  const notes: string[] = []
  try {
    // Steady state: every account held by its rendezvous replica, swept on every stream there, and
    // the warehouse's copy at the mirror's last change. Past the timeout the kill comes anyway.
    let steadyAt = 0
    let lastCounts = ''
    while (steadyAt === 0) {
      if (Date.now() - started > STEADY_TIMEOUT_SECONDS * 1000) {
        steadyAt = Date.now()
        notes.push(`No steady state within FSM_BENCH_STEADY_TIMEOUT (${STEADY_TIMEOUT_SECONDS} s): the kill came with ${lastCounts}.`)
        break
      }
      for (const r of replicas.values())
        if (r.child.exitCode !== null) throw new Error(`replica ${r.name} exited: ${[...r.problems.keys()].join('\n')}`)
      if (Date.now() - started > STEADY_TIMEOUT_SECONDS * 1000 - 4000)
        for (const r of replicas.values()) log(`${r.name} warnings: ${JSON.stringify(s.top(r.problems, 6))}`)
      await sleep(3000)
      const [held, seqs] = [await s.leases(pool), await s.warehouseSeqs(pool)]
      let owned = 0
      let swept = 0
      let replicated = 0
      for (const id of ids) {
        const l = held.get(id)
        if (l === undefined || !l.live || l.owner !== wanted.get(id)) continue
        owned++
        const db = mirrors.get(s.mirrorOf(replicas.get(l.owner)!, id))
        if (db === undefined || s.sweptAllSince(db, STREAMS, 0) === undefined) continue
        swept++
        if ((seqs.get(id) ?? -1) >= s.mirrorSeq(db)) replicated++
      }
      lastCounts = `${owned} owned by their replica, ${swept} swept every stream, ${replicated} replicated, of ${N}`
      log(`initial: ${lastCounts}; load ${load()}`)
      if (replicated === N) steadyAt = Date.now()
    }
    const steadySeconds = (steadyAt - started) / 1000
    const rssSteady = new Map([...replicas].map(([n, r]) => [n, m.procSample(r.child.pid!)]))
    const loadAtSteady = load()
    log(`settling ${SETTLE_SECONDS} s`)
    await sleep(SETTLE_SECONDS * 1000)

    // The kill, and web-app changes (no webhook) on some orphans right after it.
    const before = await s.leases(pool)
    const orphans: Orphan[] = ids.filter((id) => before.get(id)?.owner === VICTIM).map((id) => ({ id, owners: new Set() }))
    const victim = replicas.get(VICTIM)!
    const killedAt = Date.now()
    victim.child.kill('SIGKILL')
    await victim.exited
    replicas.delete(VICTIM)
    log(`SIGKILL ${VICTIM}: ${orphans.length} orphaned accounts; load ${load()}`)
    const changes: Change[] = []
    await m.eachLimited(orphans.slice(0, CHANGED), 4, async (o) => {
      const [doc] = await m.control<{ id: string; updatedAt: string }[]>(byId.get(o.id)!.controlUrl, 'POST', '/mutate', {
        resource: 'jobs',
        op: 'update',
        count: 1,
        emit: false,
        fields: { notes: 'changed during the handover' },
      })
      if (doc !== undefined) changes.push({ id: o.id, jobId: doc.id, updatedAt: doc.updatedAt, writtenAt: Date.parse(doc.updatedAt) })
    })
    const changesDoneAt = Date.now()
    let lastLog = 0
    let mirrorsDoneAt = 0
    // Swept every stream, and its post-takeover reconciliation (when its runtime runs one) ended.
    const reconciles = (o: Orphan) => o.owner !== undefined && replicas.get(o.owner)?.restores.get(o.id)?.reconcile === true
    const settled = (o: Orphan) => o.sweptAt !== undefined && (!reconciles(o) || o.reconciledAt !== undefined)
    for (;;) {
      if (Date.now() - killedAt > TAKEOVER_TIMEOUT_SECONDS * 1000) break
      if (mirrorsDoneAt === 0 && orphans.every(settled) && changes.every((c) => c.seenAt !== undefined)) mirrorsDoneAt = Date.now()
      if (
        mirrorsDoneAt > 0 &&
        (changes.every((c) => c.inWarehouseAt !== undefined) || Date.now() - mirrorsDoneAt > WAREHOUSE_WAIT_SECONDS * 1000)
      )
        break
      await sleep(500)
      const held = await s.leases(pool)
      const now = Date.now()
      for (const o of orphans) {
        const l = held.get(o.id)
        if (l === undefined || !l.live || l.owner === VICTIM || !replicas.has(l.owner!)) continue
        o.owners.add(l.owner!)
        if (o.ownedAt === undefined) [o.ownedAt, o.owner] = [l.acquiredAt, l.owner!]
        if (o.sweptAt !== undefined) continue
        const db = mirrors.get(s.mirrorOf(replicas.get(l.owner!)!, o.id))
        const at = db === undefined ? undefined : s.sweptAllSince(db, STREAMS, l.acquiredAt)
        if (at !== undefined) o.sweptAt = at
      }
      for (const o of orphans) {
        const r = o.owner === undefined ? undefined : replicas.get(o.owner)
        if (o.reconciledAt !== undefined || r?.restores.get(o.id)?.reconcile !== true) continue
        const db = mirrors.get(s.mirrorOf(r, o.id))
        const at = db === undefined ? undefined : s.reconciledSince(db, o.ownedAt!)
        if (at !== undefined) o.reconciledAt = at
      }
      for (const c of changes) {
        const l = held.get(c.id)
        if (c.seenAt !== undefined || l === undefined || !l.live || !replicas.has(l.owner!)) continue
        const db = mirrors.get(s.mirrorOf(replicas.get(l.owner!)!, c.id))
        const stored = db === undefined ? undefined : s.mirrorJobUpdatedAt(db, c.jobId)
        if (stored !== undefined && Date.parse(stored) >= c.writtenAt) c.seenAt = now
      }
      for (const c of changes) {
        if (c.inWarehouseAt !== undefined) continue
        const stored = await s.warehouseJobUpdatedAt(pool, c.id, c.jobId)
        if (stored !== undefined && Date.parse(stored) >= c.writtenAt) c.inWarehouseAt = now
      }
      if (now - lastLog > 10_000) {
        lastLog = now
        const owned = orphans.filter((o) => o.ownedAt !== undefined).length
        const swept = orphans.filter((o) => o.sweptAt !== undefined).length
        const seen = changes.filter((c) => c.seenAt !== undefined).length
        const stored = changes.filter((c) => c.inWarehouseAt !== undefined).length
        log(
          `takeover +${r1((now - killedAt) / 1000)} s: ${owned} owned, ${swept} swept every stream, of ${orphans.length}; changes in the mirror ${seen}, in the warehouse ${stored}, of ${changes.length}; load ${load()}`,
        )
      }
    }
    // The extra requests are counted over a window after each new lease: wait until the last one is over.
    const ownedLast = Math.max(...orphans.map((o) => o.ownedAt ?? 0))
    if (ownedLast > 0) await sleep(Math.max(0, ownedLast + WINDOW_SECONDS * 1000 + 1000 - Date.now()))
    const rssAfter = new Map([...replicas].map(([n, r]) => [n, m.procSample(r.child.pid!)]))
    const loadAfterTakeover = load()

    // The emulator's logs: each orphan's requests from the kill to its first sweep of every stream;
    // every key's busiest 60 s over the whole run.
    const perTakeover: number[] = []
    /** Per orphan: from the kill until swept again and its post-takeover reconciliation (if any) ended. */
    const untilSettled: number[] = []
    /** Per orphan: requests in the window after the new lease, and in as long a window before the kill. */
    const windows: [after: number, before: number][] = []
    /** Per orphan: seconds from the new lease to its first request, and from that to the sweep of every stream. */
    const firstRequest: [number, number][] = []
    const byResource = new Map<string, number>()
    const byRoute = new Map<string, number>()
    /** Each orphan's requests of its takeover by route, to show a typical one. */
    const routesOf = new Map<string, Map<string, number>>()
    let beforeOwned = 0
    let worst = { id: '', most: 0 }
    let over = 0
    let limited = 0
    const orphanById = new Map(orphans.map((o) => [o.id, o]))
    await m.eachLimited(emu.accounts, 8, async (a) => {
      const reqs = await s.apiRequests(a.controlUrl)
      const most = maxInWindow(
        reqs.map((q) => q.startedAt),
        60_000,
      )
      if (most > worst.most) worst = { id: a.id, most }
      if (most > 60) over++
      limited += reqs.filter((q) => q.status === 429).length
      const o = orphanById.get(a.id)
      if (o?.sweptAt === undefined || o.ownedAt === undefined) return
      const spent = reqs.filter((q) => q.startedAt >= killedAt && q.startedAt <= o.sweptAt!)
      perTakeover.push(spent.length)
      if (settled(o)) {
        const end = Math.max(o.sweptAt, o.reconciledAt ?? 0)
        untilSettled.push(reqs.filter((q) => q.startedAt >= killedAt && q.startedAt <= end).length)
      }
      const within = (from: number) => reqs.filter((q) => q.startedAt >= from && q.startedAt < from + WINDOW_SECONDS * 1000).length
      windows.push([within(o.ownedAt), within(killedAt - WINDOW_SECONDS * 1000)])
      if (spent[0] !== undefined) firstRequest.push([(spent[0].startedAt - o.ownedAt) / 1000, (o.sweptAt - spent[0].startedAt) / 1000])
      beforeOwned += spent.filter((q) => q.startedAt < o.ownedAt!).length
      const mine = new Map<string, number>()
      for (const q of spent) {
        byResource.set(s.resourceOf(q.path), (byResource.get(s.resourceOf(q.path)) ?? 0) + 1)
        byRoute.set(s.routeOf(q), (byRoute.get(s.routeOf(q)) ?? 0) + 1)
        mine.set(s.routeOf(q), (mine.get(s.routeOf(q)) ?? 0) + 1)
      }
      routesOf.set(a.id, mine)
    })
    const done = orphans.filter((o) => o.sweptAt !== undefined)
    const ownedS = orphans.filter((o) => o.ownedAt !== undefined).map((o) => (o.ownedAt! - killedAt) / 1000)
    const sweptS = done.map((o) => (o.sweptAt! - killedAt) / 1000)
    const stale = changes.map((c) => (c.seenAt === undefined ? Number.POSITIVE_INFINITY : (c.seenAt - c.writtenAt) / 1000))
    const whSeen = changes.filter((c) => c.inWarehouseAt !== undefined).map((c) => (c.inWarehouseAt! - c.writtenAt) / 1000)
    const mean = (xs: number[]) => (xs.length === 0 ? Number.NaN : xs.reduce((x, y) => x + y, 0) / xs.length)
    const meanRequests = r1(mean(perTakeover))
    const meanSettled = r1(mean(untilSettled))
    const extra = windows.map(([after, before]) => after - before)
    const meanExtra = r1(mean(extra))

    const moved = orphans.filter((o) => o.owners.size > 1).length
    // A typical takeover: the first orphan whose count is the median.
    const medianCount = m.quantile(perTakeover, 0.5)
    const typical = [...routesOf].find(([, rs]) => [...rs.values()].reduce((x, y) => x + y, 0) === medianCount)
    const restores = orphans.flatMap((o) => {
      const r = o.owner === undefined ? undefined : replicas.get(o.owner)?.restores.get(o.id)
      return r === undefined ? [] : [r]
    })
    const restored = restores.filter((r) => r.restored)
    const notRestored = new Map<string, number>()
    for (const r of restores.filter((x) => !x.restored)) notRestored.set(r.reason ?? '', (notRestored.get(r.reason ?? '') ?? 0) + 1)
    const restoreMs = restored.map((r) => r.durationMs)
    // From the new lease (server clock, same machine) to the restore's log line: the wait for a turn included.
    const leaseToRestored = orphans.flatMap((o) => {
      const r = o.owner === undefined ? undefined : replicas.get(o.owner)?.restores.get(o.id)
      return r === undefined || o.ownedAt === undefined || !Number.isFinite(r.at) ? [] : [(r.at - o.ownedAt) / 1000]
    })
    const leaves = [...replicas.values()].map(
      (r) =>
        `${r.name} ${JSON.stringify(Object.fromEntries([...r.messages].filter(([k]) => k.startsWith('account leaves this replica'))))}`,
    )

    figures.push(
      {
        metric: `initial steady state: ${N} accounts (~${ROWS} rows) owned, swept and replicated`,
        value: r1(steadySeconds),
        unit: 's',
        goal: '',
      },
      ...REPLICAS.map((n) => ({
        metric: `RSS of replica ${n} at the steady state (~${N / REPLICAS.length} accounts)`,
        value: r1(rssSteady.get(n)!.rssBytes / MiB),
        unit: 'MiB',
        goal: '',
      })),
      {
        metric: `accounts orphaned by the SIGKILL of one of ${REPLICAS.length} replicas`,
        value: orphans.length,
        unit: 'accounts',
        goal: '',
      },
      {
        metric: 'every orphan owned again (max over orphans, from the kill)',
        value: r1(Math.max(...ownedS)),
        unit: 's',
        ...atMost(r1(Math.max(...ownedS)), LEASE_SECONDS + 10),
        baseline: `lease ${LEASE_SECONDS} s`,
      },
      {
        metric: 'every orphan owned and sweeping again: each stream swept once by the new owner (max over orphans)',
        value: r1(Math.max(...sweptS)),
        unit: 's',
        goal: '',
        baseline: `${done.length} of ${orphans.length} done; p50 ${r1(m.quantile(sweptS, 0.5))} s, p90 ${r1(m.quantile(sweptS, 0.9))} s`,
      },
      {
        metric: `extra upstream requests per takeover (mean over orphans: its key's requests in the ${WINDOW_SECONDS} s from the new lease, less those in the ${WINDOW_SECONDS} s before the kill)`,
        value: meanExtra,
        unit: 'requests',
        ...atMost(meanExtra, 5),
        baseline: `p50 ${m.quantile(extra, 0.5)}, max ${Math.max(...extra)}; after the lease mean ${r1(mean(windows.map((w) => w[0])))}, before the kill ${r1(mean(windows.map((w) => w[1])))}`,
      },
      {
        metric:
          'upstream requests per takeover, from the kill until every stream swept again and the post-takeover reconciliation (if any) ended (mean)',
        value: meanSettled,
        unit: 'requests',
        goal: '',
        baseline: `${untilSettled.length} of ${orphans.length} settled; p50 ${m.quantile(untilSettled, 0.5)}, max ${Math.max(...untilSettled)}; with a reconciliation ${orphans.filter(reconciles).length}`,
      },
      {
        metric: 'upstream requests per takeover, from the kill to the first sweep of every stream only (the earlier figure; mean)',
        value: meanRequests,
        unit: 'requests',
        goal: '',
        baseline: `p50 ${m.quantile(perTakeover, 0.5)}, max ${Math.max(...perTakeover)}`,
      },
      {
        metric: 'from the new lease to the mirror restored (p50 over orphans)',
        value: r1(m.quantile(leaseToRestored, 0.5)),
        unit: 's',
        goal: '',
        baseline: `max ${r1(Math.max(...leaseToRestored))} s`,
      },
      {
        metric: `staleness of a web-app change made on ${changes.length} orphans at the kill, until in the new owner's mirror (max)`,
        value: r1(Math.max(...stale.filter(Number.isFinite))),
        unit: 's',
        goal: '',
        baseline: `p50 ${r1(m.quantile(stale, 0.5))} s; not seen ${stale.filter((x) => !Number.isFinite(x)).length}`,
      },
      {
        metric: `of those changes, in the warehouse within ${WAREHOUSE_WAIT_SECONDS} s of the last orphan sweeping again`,
        value: whSeen.length,
        unit: 'changes',
        goal: '',
        baseline: whSeen.length === 0 ? '' : `staleness p50 ${r1(m.quantile(whSeen, 0.5))} s, max ${r1(Math.max(...whSeen))} s`,
      },
      {
        metric: 'accounts over budget (more than 60 requests in a 60 s window, whole run)',
        value: over,
        unit: 'accounts',
        goal: '= 0',
        met: over === 0,
      },
      { metric: 'busiest 60 s of any account (whole run, all replicas)', value: worst.most, unit: 'requests', ...atMost(worst.most, 60) },
      ...[...rssAfter].map(([n, smp]) => ({
        metric: `RSS of surviving replica ${n} once every orphan swept`,
        value: r1(smp.rssBytes / MiB),
        unit: 'MiB',
        goal: '',
      })),
    )
    notes.push(
      `${N} accounts of about ${ROWS} records (--rows ${ROWS}) on one emulator process; ${REPLICAS.length} replicas of \`fsm-sync run\` (tsx, from source) with FSM_SHARDING=on, leases of ${LEASE_SECONDS} s, every other setting at its default (continuous sweeps of ${STREAMS.join(', ')}); one embedded Postgres server (fsync off) as coordinator and warehouse; ${os.cpus().length} cores shared with other work.`,
      `Load average (1/5/15 min): at start ${loadAtStart}, at the steady state ${loadAtSteady}, once the takeover was over ${loadAfterTakeover}, at the end ${load()}.`,
      `Steady state: each account leased by its rendezvous replica, every stream swept in that replica's mirror (its sync_runs) and the warehouse's state row at the mirror's last change_log seq; reached ${r1(steadySeconds)} s after the spawn; then ${SETTLE_SECONDS} s of rest before the kill. Peak RSS by then: ${REPLICAS.map((n) => `${n} ${r1(rssSteady.get(n)!.peakRssBytes / MiB)} MiB`).join(', ')}.`,
      `Takeover: owned = the new lease's acquired_at (server clock); sweeping = the new owner's first successful sweep of every stream started after that (its mirror's sync_runs), ${done.length} of ${orphans.length} within ${TAKEOVER_TIMEOUT_SECONDS} s. Owned again after p50 ${r1(m.quantile(ownedS, 0.5))} s, max ${r1(Math.max(...ownedS))} s; sweeping again after p50 ${r1(m.quantile(sweptS, 0.5))}, p90 ${r1(m.quantile(sweptS, 0.9))}, max ${r1(Math.max(...sweptS))} s. Orphans that changed owner again meanwhile: ${moved}. "account leaves this replica" lines of the survivors over the run, by reason: ${leaves.join(', ')}.`,
      `Requests per takeover (the orphan's key in the emulator's log, from the kill to that first sweep of every stream; the upstream cannot tell replicas apart, and none but the new owner may request then): mean ${meanRequests}, p50 ${m.quantile(perTakeover, 0.5)}, p90 ${m.quantile(perTakeover, 0.9)}, max ${Math.max(...perTakeover)}; by resource over all orphans ${JSON.stringify(Object.fromEntries([...byResource].sort((x, y) => y[1] - x[1])))}; before the new lease was acquired: ${beforeOwned}.`,
      `Restore at the takeover (the new owners' "takeover: the mirror is (not) restored from the warehouse" lines): ${restored.length} of ${orphans.length} restored from the warehouse (adopted ${restored.filter((r) => r.adopted === true).length}), rows p50 ${m.quantile(
        restored.map((r) => r.rows ?? 0),
        0.5,
      )}, in p50 ${r1(m.quantile(restoreMs, 0.5) / 1000)} s, max ${r1(Math.max(...restoreMs) / 1000)} s; not restored ${restores.length - restored.length} ${JSON.stringify(Object.fromEntries(notRestored))}; no line ${orphans.length - restores.length}.`,
      `From the new lease to the orphan's first upstream request: p50 ${r1(
        m.quantile(
          firstRequest.map((x) => x[0]),
          0.5,
        ),
      )} s, max ${r1(Math.max(...firstRequest.map((x) => x[0])))} s; from that request to every stream swept: p50 ${r1(
        m.quantile(
          firstRequest.map((x) => x[1]),
          0.5,
        ),
      )} s, max ${r1(Math.max(...firstRequest.map((x) => x[1])))} s.`,
      `Requests of one takeover by route (${typical?.[0] ?? 'none'}, ${medianCount} requests, the median): ${JSON.stringify(Object.fromEntries([...(typical?.[1] ?? new Map<string, number>())].sort((x, y) => y[1] - x[1])))}; over all orphans ${JSON.stringify(Object.fromEntries([...byRoute].sort((x, y) => y[1] - x[1])))}.`,
      `Staleness: ${changes.length} web-app job updates (no webhook), one on each of the first orphans, written within ${r1((changesDoneAt - killedAt) / 1000)} s of the kill; measured from each one's updatedAt until the new owner's mirror holds it: p50 ${r1(m.quantile(stale, 0.5))}, max ${r1(Math.max(...stale))} s (not seen: ${stale.filter((x) => x === Number.POSITIVE_INFINITY).length}).`,
      `Budget: busiest 60 s of any key over the whole run (the backfills, any lease that moved, the takeover) ${worst.most} (${worst.id}); 429s answered ${limited}.`,
      `Survivors' most frequent warnings and errors over the run (numbers as N): ${[...replicas.values()].map((r) => `${r.name}: ${JSON.stringify(s.top(r.problems, 6))}`).join('; ')}.`,
    )
    return { name: 'sharded-takeover', topic: 'sharding', figures, notes }
  } finally {
    stopHeartbeats()
    mirrors.closeAll()
    await Promise.all(
      [...replicas.values()].map((r) =>
        m.stopChild({ child: r.child, exited: r.exited, lines: [], dropped: 0, warnings: [], warned: 0 }, 30_000),
      ),
    )
    await m.stopChild(emu, 10_000)
    await pool.end()
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
