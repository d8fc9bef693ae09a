// What one idle account costs a many-account process: N whole account runtimes (mirror, governor,
// client, webhook service, schedules, continuous sweeps, metrics) in one child process against a
// many-account emulator in another (account-cost-child.ts), for N = 10, 100, 300, 1,000. After every
// first backfill and a settling minute, a quiet period with nothing changing upstream: RSS, fds,
// timers, CPU and upstream requests per account. Then the same in a new process on the same, now
// backfilled mirrors (a restarted daemon). ACCOUNT_COST_N=10,100 picks the sizes.
import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { tempDir } from '../test/support/temp-mirror.js'
import { atMost, type BenchResult, type Figure } from './lib.js'

const CHILD = fileURLToPath(new URL('./account-cost-child.ts', import.meta.url))
const ROWS = 200
const SETTLE_MS = 60_000
const QUIET_MS = 120_000
const ULIMIT = process.env.ACCOUNT_COST_ULIMIT === undefined ? undefined : Number(process.env.ACCOUNT_COST_ULIMIT)

interface Sample {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  fds: number
  /** The most RSS of the process so far (VmHWM). */
  peakRss: number
}
export interface Run {
  n: number
  openMs: number
  backfillMs: number
  backfillCpuMicros: number
  clientRows: number
  start: Sample
  opened: Sample
  backfilled: Sample
  quiet: Sample
  quietMs: number
  quietCpuMicros: number
  quietCpuSystemMicros: number
  /** Passes of the checkpoint thread over the quiet period that checkpointed (not skipped as idle), and their wall time. */
  checkpointPasses: number
  checkpointMicros: number
  requests: number[]
  active: Record<string, number>
  ready: number
  logged: Record<string, number>
  shown: string[]
  loadAverage: number[]
  /** Accounts whose mirror was parked (closed while idle) at the end of the quiet period. */
  parked: number
  /** The most mirrors open at once (the cap's high-water mark, mirror-slots.ts). */
  peakOpenMirrors: number
  /** The soft `ulimit -n` the accounts' process ran under (ACCOUNT_COST_ULIMIT), if set. */
  ulimit?: number
}

function run(args: string[], onLine?: (line: string, p: ChildProcess) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const argv = ['--expose-gc', '--import', 'tsx', CHILD, ...args]
    // ACCOUNT_COST_ULIMIT=1024: the accounts' process runs under that `ulimit -n` (the emulator's does not),
    // hard and soft: Node raises its soft limit to the hard one at start.
    const limit = args[0] === 'accounts' ? ULIMIT : undefined
    const p =
      limit === undefined
        ? spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] })
        : spawn('sh', ['-c', `ulimit -n ${limit} && exec "$0" "$@"`, process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    p.stdout.on('data', (c: Buffer) => {
      out += c.toString()
      if (onLine !== undefined && out.includes('\n')) onLine(out.slice(0, out.indexOf('\n')), p)
    })
    p.on('error', reject)
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`account-cost child ${args[0]} exited ${code}`))))
  })
}

export interface Size {
  fresh: Run
  /** A new process on the backfilled mirrors of `fresh`. */
  restart: Run
}

/** One size: the emulator in its own process, the accounts in another, then in a new one. */
export async function measure(n: number, settleMs = SETTLE_MS, quietMs = QUIET_MS, extra: string[] = []): Promise<Size> {
  const dir = tempDir('fsm-bench-account-cost-')
  const specFile = path.join(dir, 'spec.json')
  let emulator: ChildProcess | undefined
  const emulatorDone = run(['emulator', String(n), String(ROWS)], (line, p) => {
    if (emulator === undefined) writeFileSync(specFile, line)
    emulator = p
  })
  while (emulator === undefined) await new Promise((r) => setTimeout(r, 100))
  try {
    const accounts = async () => {
      const out = await run(['accounts', specFile, dir, String(settleMs), String(quietMs), ...extra])
      return {
        ...(JSON.parse(out) as Run),
        loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
        ...(ULIMIT === undefined ? {} : { ulimit: ULIMIT }),
      }
    }
    const fresh = await accounts()
    // Shown at once: a big size may not have the time for its restart phase.
    process.stdout.write(
      `  ${n} accounts, after the backfill: ${JSON.stringify({ ...summary(fresh), peakOpenMirrors: fresh.peakOpenMirrors })}\n`,
    )
    return { fresh, restart: await accounts() }
  } finally {
    emulator.kill('SIGTERM')
    await emulatorDone.catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  }
}

const MiB = 2 ** 20
const round = (x: number, digits = 2) => Number(x.toFixed(digits))
const perMinute = (r: Run) => r.requests.map((x) => (x * 60_000) / r.quietMs)

export default async function accountCost(): Promise<BenchResult> {
  const sizes = (process.env.ACCOUNT_COST_N ?? '10,100,300,1000').split(',').map(Number)
  const runs: Size[] = []
  for (const n of sizes) {
    runs.push(await measure(n))
    process.stdout.write(
      `  ${n} accounts: ${JSON.stringify({ fresh: summary(runs.at(-1)!.fresh), restart: summary(runs.at(-1)!.restart) })}\n`,
    )
  }
  const figures: Figure[] = []
  const goal1000 = (r: Run, value: number, bound: number) => (r.n >= 1000 ? atMost(value, bound) : { goal: '' })
  for (const { fresh: r, restart } of runs) {
    const s = summary(r)
    const t = summary(restart)
    figures.push(
      { metric: `${r.n} accounts: process RSS, idle after the backfill`, value: s.rssMiB, unit: 'MiB', ...goal1000(r, s.rssMiB, 1024) },
      { metric: `${r.n} accounts: process RSS, idle after a restart`, value: t.rssMiB, unit: 'MiB', ...goal1000(r, t.rssMiB, 1024) },
      {
        metric: `${r.n} accounts: peak RSS over the backfill and the quiet period`,
        value: s.peakRssMiB,
        unit: 'MiB',
        ...goal1000(r, s.peakRssMiB, 1024),
      },
      { metric: `${r.n} accounts: the most mirrors open at once`, value: r.peakOpenMirrors, unit: 'mirrors', goal: '' },
      {
        metric: `${r.n} accounts: RSS per account after the backfill (growth from the empty process / N)`,
        value: s.rssPerAccountMiB,
        unit: 'MiB',
        goal: '',
      },
      { metric: `${r.n} accounts: RSS per account after a restart`, value: t.rssPerAccountMiB, unit: 'MiB', goal: '' },
      { metric: `${r.n} accounts: heap per account after the backfill`, value: s.heapPerAccountMiB, unit: 'MiB', goal: '' },
      { metric: `${r.n} accounts: fds per account`, value: s.fdsPerAccount, unit: 'fds', goal: '' },
      { metric: `${r.n} accounts: timers per account (active Timeout handles / N)`, value: s.timersPerAccount, unit: 'timers', goal: '' },
      {
        metric: `${r.n} accounts: upstream requests per account per minute, idle (mean)`,
        value: s.requestsPerMinuteMean,
        unit: 'requests',
        goal: '',
      },
      {
        metric: `${r.n} accounts: upstream requests per minute, idle (busiest account, either phase)`,
        value: Math.max(s.requestsPerMinuteMax, t.requestsPerMinuteMax),
        unit: 'requests',
        ...atMost(Math.max(s.requestsPerMinuteMax, t.requestsPerMinuteMax), 10),
      },
      { metric: `${r.n} accounts: CPU per account, idle`, value: s.cpuPerAccountMicrosPerSecond, unit: 'µs/s', goal: '' },
      { metric: `${r.n} accounts: process CPU, idle`, value: s.cpuCores, unit: 'cores', ...goal1000(r, s.cpuCores, 1) },
      { metric: `${r.n} accounts: checkpoints per account per minute, idle`, value: s.checkpointsPerMinute, unit: 'passes', goal: '' },
      {
        metric: `${r.n} accounts: the checkpoint thread's time in passes, idle (wall, syncs included)`,
        value: s.checkpointThreadBusy,
        unit: 's/s',
        goal: '',
      },
      { metric: `${r.n} accounts: first backfill of all (${ROWS} rows each)`, value: s.backfillSeconds, unit: 's', goal: '' },
    )
  }
  for (let i = 1; i < runs.length; i++) {
    const [a, b] = [runs[i - 1]!.fresh, runs[i]!.fresh]
    figures.push({
      metric: `one more account between ${a.n} and ${b.n}, after the backfill: RSS`,
      value: round((b.quiet.rss - b.start.rss - (a.quiet.rss - a.start.rss)) / (b.n - a.n) / MiB),
      unit: 'MiB',
      goal: '',
    })
  }
  const phase = (r: Run, name: string) => {
    const s = summary(r)
    return `${r.n} accounts, ${name}: opened in ${s.openSeconds} s, first sweeps ${s.backfillSeconds} s; RSS ${s.rssMiB} MiB of which heap used ${s.heapUsedMiB} MiB (heap reserved ${round(r.quiet.heapTotal / MiB, 1)}), external ${s.externalMiB} MiB, the rest (native: SQLite, allocator, threads, code) ${s.nativeMiB} MiB; ${round(r.quiet.fds / r.n, 1)} fds per account in all; requests a minute mean ${s.requestsPerMinuteMean}, busiest ${s.requestsPerMinuteMax}; CPU ${s.cpuCores} cores; handles ${JSON.stringify(r.active)}; load average ${r.loadAverage.join(' ')}; ${r.ready}/${r.n} ready; ${r.parked}/${r.n} mirrors parked at the end, at most ${r.peakOpenMirrors} open at once, peak RSS ${s.peakRssMiB} MiB${r.ulimit === undefined ? '' : `, under ulimit -n ${r.ulimit}`}; log lines at warn and above ${JSON.stringify(r.logged)}.`
  }
  return {
    name: 'account-cost',
    topic: 'accounts',
    figures,
    notes: [
      `Each account: an emulator account of about ${ROWS} rows (60 requests a minute), every default (continuous sweeps, schedules), its own mirror, Config from an accounts file (loadAccounts); one checkpoint thread for the process; the emulator in another process.`,
      `Measured over ${QUIET_MS / 1000} s with nothing changing upstream, after every account's first sweep and ${SETTLE_MS / 1000} s of settling (the sweep back-off reaches its bound); requests counted by the emulator per account. "After a restart": a new process on the same mirrors, measured the same way.`,
      ...runs.flatMap(({ fresh, restart }) => [phase(fresh, 'after the backfill'), phase(restart, 'after a restart')]),
    ],
  }
}

export function summary(r: Run) {
  const quietS = r.quietMs / 1000
  const rpm = perMinute(r)
  return {
    rssMiB: round(r.quiet.rss / MiB, 1),
    peakRssMiB: round((r.quiet.peakRss ?? 0) / MiB, 1),
    rssPerAccountMiB: round((r.quiet.rss - r.start.rss) / r.n / MiB),
    heapPerAccountMiB: round((r.quiet.heapUsed - r.start.heapUsed) / r.n / MiB, 3),
    fdsPerAccount: round((r.quiet.fds - r.start.fds) / r.n),
    timersPerAccount: round((r.active.Timeout ?? 0) / r.n),
    requestsPerMinuteMean: round(rpm.reduce((s, x) => s + x, 0) / r.n),
    requestsPerMinuteMax: round(Math.max(...rpm)),
    cpuPerAccountMicrosPerSecond: round(r.quietCpuMicros / quietS / r.n, 0),
    cpuCores: round(r.quietCpuMicros / quietS / 1e6, 3),
    checkpointsPerMinute: round((r.checkpointPasses * 60) / quietS / r.n, 1),
    checkpointThreadBusy: round(r.checkpointMicros / quietS / 1e6, 3),
    backfillSeconds: round(r.backfillMs / 1000, 1),
    openSeconds: round(r.openMs / 1000, 1),
    heapUsedMiB: round(r.quiet.heapUsed / MiB, 1),
    externalMiB: round(r.quiet.external / MiB, 1),
    nativeMiB: round((r.quiet.rss - r.quiet.heapTotal - r.quiet.external) / MiB, 1),
  }
}
