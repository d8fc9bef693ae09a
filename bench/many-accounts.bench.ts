// Many accounts in one daemon: FSM_BENCH_ACCOUNTS (default 1,000) accounts of about
// FSM_BENCH_ROWS (200) records on one multi-account emulator (its own process), kept by one
// `fsm-sync run` (another process) listing them in its config file, keys in files, at every
// default. Measured: the backfill until every account's streams have swept and every mirror is
// exact; a steady state with 1 % of the accounts changing in the web app once a second each (CPU and
// RSS of the daemon from /proc, staleness of those changes, the budget of every account from the
// emulator's request logs, what an idle account costs); webhook acks at 1,000 deliveries/s spread
// over the accounts.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { compareMirror } from '../test/support/compare-mirror.js'
import { freePort } from '../test/support/free-port.js'
import { tempDir } from '../test/support/temp-mirror.js'
import { descriptorsNeeded } from '../src/daemon/descriptor-budget.js'
import { atMost, maxInWindow, type BenchResult, type Figure } from './lib.js'
import * as m from './many-accounts-lib.js'

const N = Number(process.env.FSM_BENCH_ACCOUNTS ?? 1000)
const ROWS = Number(process.env.FSM_BENCH_ROWS ?? 200)
const ACTIVE = Math.max(1, Math.round(N / 100))
const STEADY_SECONDS = Number(process.env.FSM_BENCH_STEADY_SECONDS ?? 180)
/** After the backfill, before the steady window: the idle accounts' rests grow to their bound (1 + 2 + ... + 32 s, and a round). */
const SETTLE_SECONDS = Number(process.env.FSM_BENCH_SETTLE_SECONDS ?? 120)
const BACKFILL_TIMEOUT_SECONDS = Number(process.env.FSM_BENCH_BACKFILL_TIMEOUT ?? 2400)
const WEBHOOK_RATE = Number(process.env.FSM_BENCH_WEBHOOK_RATE ?? 1000)
const WEBHOOK_SECONDS = Number(process.env.FSM_BENCH_WEBHOOK_SECONDS ?? 10)
/** How long to wait for the acknowledged deliveries to be applied, after the last was sent. */
const APPLIED_TIMEOUT_SECONDS = Number(process.env.FSM_BENCH_APPLIED_TIMEOUT ?? 300)
/** How long /readyz and /metrics may take at the end (a Kubernetes probe gives up after seconds, Prometheus after 10 s by default). */
const SCRAPE_LIMIT_MS = 120_000
const STREAMS = ['clients', 'jobs', 'visits', 'invoices', 'objects:equipment', 'objects:inspections']
/** Where the web-app writes go (as staleness.bench.ts): jobs and visits take most. */
const MIX: readonly [resource: string, table: string, slug: string | null][] = [
  ['jobs', 'jobs', null],
  ['visits', 'visits', null],
  ['jobs', 'jobs', null],
  ['visits', 'visits', null],
  ['clients', 'clients', null],
  ['invoices', 'invoices', null],
  ['objects/equipment', 'custom_records', 'equipment'],
]
const GiB = 2 ** 30
const MiB = 2 ** 20
const r1 = (x: number) => Math.round(x * 10) / 10
const r3 = (x: number) => Math.round(x * 1000) / 1000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const log = (msg: string) => process.stdout.write(`  [${new Date().toISOString().slice(11, 19)}] ${msg}\n`)

interface Change {
  account: string
  table: string
  slug: string | null
  id: string
  writtenAt: number
  updatedAt: string
  seenAt?: number
}

export default async function manyAccounts(): Promise<BenchResult> {
  const loadAtStart = os.loadavg().map((x) => x.toFixed(2))
  const dir = tempDir('fsm-bench-many-')
  const dataDir = path.join(dir, 'data')
  const t00 = Date.now()
  const emu = await m.startEmulatorChild(N, ROWS)
  const emulatorStartSeconds = (Date.now() - t00) / 1000
  log(`emulator: ${N} accounts of about ${ROWS} rows in ${r1(emulatorStartSeconds)} s`)
  const accounts = emu.accounts
  const secrets = new Map(accounts.map((a) => [a.id, `whsec_bench_${a.id}_0123456789abcdef`]))
  const port = await freePort()
  mkdirSync(path.join(dir, 'keys'), { recursive: true, mode: 0o700 })
  for (const a of accounts) {
    writeFileSync(path.join(dir, 'keys', a.id), `${a.apiKey}\n`, { mode: 0o600 })
    // Each account's webhook secret, where `webhooks register --account` writes it.
    mkdirSync(path.join(dataDir, a.id), { recursive: true, mode: 0o700 })
    const entry = {
      endpointId: `bench-${a.id}`,
      url: `http://127.0.0.1:${port}/webhooks/${a.id}`,
      secret: secrets.get(a.id)!,
      createdAt: new Date().toISOString(),
      supersededAt: null,
    }
    writeFileSync(path.join(dataDir, a.id, 'mirror.secrets.json'), JSON.stringify({ version: 1, secrets: [entry] }), { mode: 0o600 })
  }
  const config = path.join(dir, 'config.json')
  writeFileSync(
    config,
    JSON.stringify({ baseUrl: emu.url, dataDir, accounts: accounts.map((a) => ({ id: a.id, apiKeyFile: path.join(dir, 'keys', a.id) })) }),
  )
  const started = Date.now()
  const daemon = m.startDaemonChild({ FSM_CONFIG: config, FSM_HTTP_HOST: '127.0.0.1', FSM_HTTP_PORT: String(port), FSM_LOG_LEVEL: 'info' })
  const pid = daemon.child.pid!
  const mirrors = new m.Mirrors((id) => path.join(dataDir, id, 'mirror.db'))
  const figures: Figure[] = []
  const notes: string[] = []
  try {
    // Backfill: every account's six streams swept once, read from each mirror's own sync_runs.
    const doneAt = new Map<string, number>()
    let peakRssBackfill = 0
    // The daemon's descriptors, sampled with its RSS through the whole run.
    let peakFds = 0
    let peakKinds: Record<string, number> = {}
    const sampleFds = (fds: number) => {
      if (fds <= peakFds) return
      peakFds = fds
      peakKinds = m.descriptorKinds(pid)
    }
    while (doneAt.size < N) {
      if (Date.now() - started > BACKFILL_TIMEOUT_SECONDS * 1000) break
      if (daemon.child.exitCode !== null) throw new Error(`the daemon exited: ${daemon.lines.slice(-20).join('\n')}`)
      await sleep(3000)
      const sample = m.procSample(pid)
      peakRssBackfill = Math.max(peakRssBackfill, sample.rssBytes)
      sampleFds(sample.fds)
      for (const a of accounts) {
        if (doneAt.has(a.id)) continue
        const db = mirrors.get(a.id)
        if (db === undefined) continue
        const swept = m.sweptStreams(db)
        if (STREAMS.every((s) => swept.has(s))) {
          doneAt.set(a.id, Date.now())
          mirrors.close(a.id)
        }
      }
      log(`backfill: ${doneAt.size} of ${N} accounts swept every stream after ${r1((Date.now() - started) / 1000)} s`)
    }
    if (doneAt.size === 0) throw new Error(`no account backfilled within ${BACKFILL_TIMEOUT_SECONDS} s`)
    const backfillSeconds = Math.max(...doneAt.values()) - started
    const atBackfill = m.procSample(pid)
    // Exactness: every account's mirror record by record against the emulator's state.
    const t1 = Date.now()
    const jobsOf = new Map<string, Record<string, unknown>[]>()
    let exact = 0
    const inexact: string[] = []
    await m.eachLimited(accounts, 8, async (a) => {
      const db = mirrors.get(a.id)
      if (db === undefined) return void inexact.push(`${a.id}: no mirror`)
      const cmp = await compareMirror(
        async (resource) => {
          const rows = await m.control<Record<string, unknown>[]>(a.controlUrl, 'GET', `/state/${resource}`)
          if (resource === 'jobs')
            jobsOf.set(
              a.id,
              rows
                .filter((r) => r.deleted !== true)
                .slice(0, 10)
                .map(({ deleted: _d, ...rest }) => rest),
            )
          return rows
        },
        (sql, ...params) => db.prepare(sql).all(...params) as Record<string, unknown>[],
        ['equipment', 'inspections'],
      )
      mirrors.close(a.id)
      if (cmp.mismatches.length === 0) exact++
      else inexact.push(`${a.id}: ${cmp.mismatches.length} mismatches, first ${JSON.stringify(cmp.mismatches[0])}`)
    })
    const compareSeconds = (Date.now() - t1) / 1000
    log(`exact: ${exact} of ${N} (compared in ${r1(compareSeconds)} s)`)
    figures.push(
      {
        metric: `backfill of ${N} accounts (~${ROWS} rows each): every stream of every account swept once`,
        value: r1(backfillSeconds / 1000),
        unit: 's',
        goal: 'every account backfilled',
        met: doneAt.size === N,
      },
      {
        metric: 'accounts whose mirror is exact after the backfill (all compared, record by record)',
        value: exact,
        unit: 'accounts',
        goal: `= ${N}`,
        met: exact === N,
      },
    )
    log(`settling for ${SETTLE_SECONDS} s`)
    await sleep(SETTLE_SECONDS * 1000)
    // Steady state: ACTIVE accounts (every 100th) change once a second each in the web app.
    const active = accounts.filter((_, i) => i % Math.round(N / ACTIVE) === 0).slice(0, ACTIVE)
    const activeIds = new Set(active.map((a) => a.id))
    const changes: Change[] = []
    const pending = new Set<Change>()
    let stop = false
    let steadyTo = Number.POSITIVE_INFINITY
    const poller = (async () => {
      while (!stop || pending.size > 0) {
        const now = Date.now()
        for (const c of pending) {
          const db = mirrors.get(c.account)
          if (db === undefined) continue
          const stored = (
            c.slug === null
              ? db.prepare(`SELECT updated_at FROM "${c.table}" WHERE id = ?`).pluck().get(c.id)
              : db.prepare(`SELECT updated_at FROM custom_records WHERE slug = ? AND id = ?`).pluck().get(c.slug, c.id)
          ) as string | undefined
          if (stored !== undefined && stored >= c.updatedAt) {
            c.seenAt = now
            pending.delete(c)
          }
        }
        if (stop && Date.now() - steadyTo > 120_000) break
        await sleep(250)
      }
    })()
    const steadyFrom = Date.now()
    const before = m.procSample(pid)
    const emuBefore = m.procSample(emu.child.pid!)
    const rss: number[] = []
    const sampler = setInterval(() => {
      const sample = m.procSample(pid)
      rss.push(sample.rssBytes)
      sampleFds(sample.fds)
    }, 5000)
    let writeErrors = 0
    await Promise.all(
      active.map(async (a, k) => {
        for (let s = 0; s < STEADY_SECONDS; s++) {
          await sleep(Math.max(0, steadyFrom + s * 1000 + (k * 1000) / ACTIVE - Date.now()))
          const [resource, table, slug] = MIX[(s + k) % MIX.length]!
          try {
            const fields = slug === null ? { notes: `web app ${s}` } : {}
            const [doc] = await m.control<{ id: string; updatedAt: string }[]>(a.controlUrl, 'POST', '/mutate', {
              resource,
              op: 'update',
              count: 1,
              emit: false,
              fields,
            })
            if (doc === undefined) continue
            const c: Change = { account: a.id, table, slug, id: doc.id, writtenAt: Date.parse(doc.updatedAt), updatedAt: doc.updatedAt }
            changes.push(c)
            pending.add(c)
          } catch {
            writeErrors++
          }
        }
      }),
    )
    steadyTo = Date.now()
    clearInterval(sampler)
    const after = m.procSample(pid)
    const emuAfter = m.procSample(emu.child.pid!)
    const steadySeconds = (steadyTo - steadyFrom) / 1000
    const cores = (after.cpuSeconds - before.cpuSeconds) / steadySeconds
    const emuCores = (emuAfter.cpuSeconds - emuBefore.cpuSeconds) / steadySeconds
    stop = true
    await poller
    const stale = changes.map((c) => (c.seenAt === undefined ? Number.POSITIVE_INFINITY : (c.seenAt - c.writtenAt) / 1000))
    const unseen = changes.filter((c) => c.seenAt === undefined).length
    const maxRss = Math.max(...rss, after.rssBytes)
    log(`steady: ${r3(cores)} cores, RSS max ${r1(maxRss / MiB)} MiB, ${changes.length} changes, p99 ${r1(m.quantile(stale, 0.99))} s`)
    // Webhooks: WEBHOOK_RATE a second over every account in turn, each a real job of that account.
    const deliveries: m.Delivery[] = []
    for (let i = 0; i < WEBHOOK_RATE * WEBHOOK_SECONDS; i++) {
      const a = accounts[i % N]!
      const jobs = jobsOf.get(a.id) ?? []
      const job = jobs[Math.floor(i / N) % Math.max(1, jobs.length)]
      if (job !== undefined) deliveries.push(m.jobDelivery(a.id, secrets.get(a.id)!, job, i))
    }
    const whBefore = m.procSample(pid)
    const sent = await m.sendAtRate(`http://127.0.0.1:${port}`, deliveries, WEBHOOK_RATE)
    const whAfter = m.procSample(pid)
    const ackP99 = m.quantile(sent.latencies, 0.99)
    const acked = sent.statuses[200] ?? 0
    // Acknowledged means stored (durable): the rate the daemon stored them at, first send to last ack.
    const storedPerSecond = acked / sent.seconds
    const whLoad = os.loadavg()[0]!
    log(
      `webhooks: ${deliveries.length} at ${WEBHOOK_RATE}/s, p50 ${r1(m.quantile(sent.latencies, 0.5))} p99 ${r1(ackP99)} ms, stored ${r1(storedPerSecond)}/s, statuses ${JSON.stringify(sent.statuses)}`,
    )
    // Until every acknowledged delivery is applied (or kept with its error) in its account's mirror.
    const applied = await m.appliedAfter(mirrors, accounts, acked, sent.endedAt, APPLIED_TIMEOUT_SECONDS * 1000)
    log(`webhooks: ${applied.settled} of ${acked} applied ${r1(applied.seconds)} s after the last was sent`)
    // One scrape of /metrics and one /readyz, after everything else: their size grows with N.
    // A route that does not answer within the limit is a figure too (a probe or scraper would give up).
    const scrape = async (route: string): Promise<string> => {
      const t = Date.now()
      try {
        const res = await fetch(`http://127.0.0.1:${port}${route}`, { signal: AbortSignal.timeout(SCRAPE_LIMIT_MS) })
        const text = await res.text()
        const series = route === '/metrics' ? `, ${text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length} series` : ''
        return `${route} answered ${res.status}, ${r1(text.length / MiB)} MB${series} in ${r1((Date.now() - t) / 1000)} s`
      } catch (err) {
        return `${route} did not answer within ${SCRAPE_LIMIT_MS / 1000} s (${(err as Error).name})`
      }
    }
    const scrapes = [await scrape('/readyz'), await scrape('/metrics')]
    log(scrapes.join('; '))
    // The intake journal's group commits over the whole run (its process series, when it has one).
    const text = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(SCRAPE_LIMIT_MS) })
      .then((r) => r.text())
      .catch(() => '')
    const series = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
    const commits = series('fsm_webhook_journal_group_commits_total')
    const journal =
      text === ''
        ? 'intake journal: unknown (/metrics did not answer)'
        : Number.isNaN(commits)
          ? 'no intake journal'
          : `intake journal: ${commits} group commits of ${r1(series('fsm_webhook_journal_grouped_deliveries_total') / commits)} deliveries on average, each synced ${r1(series('fsm_webhook_journal_wal_sync_micros_total') / commits / 1000)} ms after its commit on average`
    log(journal)
    scrapes.push(journal)
    // Budgets and idle requests, from every account's request log at the emulator.
    let worst = { id: '', most: 0 }
    let limited = 0
    let idleRequests = 0
    let idleMaxPerMinute = 0
    let activeRequests = 0
    await m.eachLimited(accounts, 8, async (a) => {
      const entries = await m.control<{ startedAt: string; path: string; status: number }[]>(a.controlUrl, 'GET', '/requests')
      const api = entries.filter((e) => e.path.startsWith('/api/'))
      const times = api.map((e) => Date.parse(e.startedAt))
      const most = maxInWindow(times, 60_000)
      if (most > worst.most) worst = { id: a.id, most }
      limited += api.filter((e) => e.status === 429).length
      const inSteady = times.filter((t) => t >= steadyFrom && t < steadyTo).length
      if (activeIds.has(a.id)) activeRequests += inSteady
      else {
        idleRequests += inSteady
        idleMaxPerMinute = Math.max(idleMaxPerMinute, inSteady / (steadySeconds / 60))
      }
    })
    const idleCount = N - ACTIVE
    const idlePerMinute = idleRequests / idleCount / (steadySeconds / 60)
    figures.push(
      {
        metric: `steady state, ${ACTIVE} of ${N} accounts changing 1/s each: daemon CPU`,
        value: r3(cores),
        unit: 'cores',
        ...atMost(r3(cores), 1),
        baseline: `emulator ${r3(emuCores)} cores`,
      },
      {
        metric: 'steady state: daemon RSS (largest sample, every 5 s)',
        value: r1(maxRss / MiB),
        unit: 'MiB',
        goal: `< ${GiB / MiB}`,
        met: maxRss < GiB,
      },
      { metric: 'busiest 60 s of any account at the emulator (whole run)', value: worst.most, unit: 'requests', ...atMost(worst.most, 60) },
      {
        metric: `web-app staleness p99, active accounts (${changes.length} changes)`,
        value: r1(m.quantile(stale, 0.99)),
        unit: 's',
        goal: '< 60',
        met: m.quantile(stale, 0.99) < 60,
      },
      { metric: 'web-app staleness p50, active accounts', value: r1(m.quantile(stale, 0.5)), unit: 's', goal: '' },
      { metric: `webhook ack p99 at ${WEBHOOK_RATE}/s over ${N} accounts`, value: r1(ackP99), unit: 'ms', goal: '< 20', met: ackP99 < 20 },
      {
        metric: `webhook deliveries applied, seconds after the last was sent (${applied.settled} of ${acked})`,
        value: r1(applied.seconds),
        unit: 's',
        goal: '',
      },
      {
        metric: `webhook deliveries stored (acknowledged) per second, sent at ${WEBHOOK_RATE}/s`,
        value: r1(storedPerSecond),
        unit: '/s',
        goal: '',
        baseline: `ack p50 ${r1(m.quantile(sent.latencies, 0.5))} ms; daemon CPU ${r3((whAfter.cpuSeconds - whBefore.cpuSeconds) / sent.seconds)} cores; load average ${whLoad.toFixed(2)}`,
      },
      { metric: 'idle account: RSS (whole process / N, steady state)', value: r3(after.rssBytes / N / MiB), unit: 'MiB', goal: '' },
      { metric: 'idle account: file descriptors (whole process / N)', value: r3(after.fds / N), unit: 'fds', goal: '' },
      {
        metric: `daemon's descriptors at most (every 3-5 s), under its soft limit${process.env.FSM_BENCH_DAEMON_NOFILE ? ` (ulimit -n ${process.env.FSM_BENCH_DAEMON_NOFILE})` : ''}`,
        value: peakFds,
        unit: 'fds',
        goal: '',
      },
      {
        metric: 'idle account: upstream requests per minute (mean over the idle accounts)',
        value: r3(idlePerMinute),
        unit: 'req/min',
        ...atMost(r3(idlePerMinute), 10),
        baseline: `most of one idle account: ${r1(idleMaxPerMinute)}/min`,
      },
      { metric: 'idle account: CPU (whole process / N, steady state)', value: r1((cores / N) * 1000), unit: 'millicores', goal: '' },
    )
    const limits = m.openFileLimit(pid)
    const said = daemon.lines.filter((l) => /descriptor|open files|ulimit/i.test(l))
    notes.push(
      `${N} accounts of about ${ROWS} records (--rows ${ROWS}) on one emulator process (started in ${r1(emulatorStartSeconds)} s), one \`fsm-sync run\` (tsx, from source) with an accounts list (keys in files, every other setting at its default: continuous sweeps, hourly reference data, the usual schedules), each account's webhook secret in its secrets file.`,
      `Load average (1/5/15 min) at start ${loadAtStart.join('/')}, at the end ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join('/')} on ${os.cpus().length} cores shared with other work.`,
      `Descriptors: the daemon's ${limits}; it needs about ${descriptorsNeeded(N)} by its own count (docs/accounts.md); at start it said ${said.length === 0 ? 'nothing about them (the limit suffices: that line is at debug level)' : said.map((l) => l.slice(0, 300)).join(' | ')}. Open at the end of the backfill ${atBackfill.fds}, in the steady state ${after.fds}, at most ${peakFds} (then ${JSON.stringify(peakKinds)}); threads ${after.threads}.`,
      `Backfill: first account done ${r1((Math.min(...doneAt.values()) - started) / 1000)} s after the daemon's spawn, median ${r1((m.quantile([...doneAt.values()], 0.5) - started) / 1000)} s, last ${r1(backfillSeconds / 1000)} s; RSS at its end ${r1(atBackfill.rssBytes / MiB)} MiB (largest sample during it ${r1(peakRssBackfill / MiB)} MiB, peak ${r1(atBackfill.peakRssBytes / MiB)} MiB); CPU ${r1(atBackfill.cpuSeconds)} s in all. Exactness: every account compared (clients, jobs, visits, invoices, equipment, inspections), in ${r1(compareSeconds)} s${inexact.length === 0 ? '' : `; not exact: ${inexact.slice(0, 5).join('; ')}`}.`,
      `Steady state: after ${SETTLE_SECONDS} s of rest, ${r1(steadySeconds)} s, ${ACTIVE} accounts (every ${Math.round(N / ACTIVE)}th) each one web-app update a second (no webhook), jobs and visits most; ${changes.length} changes, ${unseen} not in the mirror 120 s after the window (counted as infinitely stale), ${writeErrors} writes refused; staleness p50 ${r1(m.quantile(stale, 0.5))}, p90 ${r1(m.quantile(stale, 0.9))}, p99 ${r1(m.quantile(stale, 0.99))}, max ${r1(Math.max(...stale))} s. Daemon CPU ${r3(cores)} cores (/proc/<pid>/stat over the window), RSS ${r1(after.rssBytes / MiB)} MiB at its end (peak since start ${r1(after.peakRssBytes / MiB)} MiB); the emulator ${r3(emuCores)} cores, ${r1(emuAfter.rssBytes / MiB)} MiB.`,
      `Requests in the steady window: the ${idleCount} idle accounts ${idleRequests} (${r3(idlePerMinute)}/min each), the ${ACTIVE} active ones ${activeRequests} (${r1(activeRequests / ACTIVE / (steadySeconds / 60))}/min each). Busiest 60 s of any account over the whole run: ${worst.most} (${worst.id}); 429s answered to the daemon: ${limited}.`,
      `Webhooks: ${deliveries.length} job.updated deliveries (real jobs of each account, signed with its secret) at ${WEBHOOK_RATE}/s open loop to /webhooks/<id>, round robin over the accounts, from this process; statuses ${JSON.stringify(sent.statuses)}; ack p50 ${r1(m.quantile(sent.latencies, 0.5))}, p90 ${r1(m.quantile(sent.latencies, 0.9))}, p99 ${r1(ackP99)}, max ${r1(Math.max(...sent.latencies))} ms from each one's scheduled time (this process sent them p99 ${r1(m.quantile(sent.lags, 0.99))} ms late, max ${r1(Math.max(...sent.lags))} ms); daemon CPU meanwhile ${r3((whAfter.cpuSeconds - whBefore.cpuSeconds) / sent.seconds)} cores.`,
      `Read once after the webhooks: ${scrapes.join('; ')}.`,
      `The daemon's stderr: ${daemon.lines.length + daemon.dropped} lines at info; warnings and errors: ${daemon.warned}${
        daemon.warned === 0
          ? ''
          : ` (the first: ${daemon.warnings
              .slice(0, 3)
              .map((l) => l.slice(0, 300))
              .join(' | ')})`
      }.`,
    )
  } finally {
    mirrors.close()
    await m.stopChild(daemon)
    await m.stopChild(emu)
    rmSync(dir, { recursive: true, force: true })
  }
  return { name: 'many-accounts', topic: 'accounts', figures, notes }
}
