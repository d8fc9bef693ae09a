// Child processes of account-cost.bench.ts. `emulator N ROWS`: a many-account emulator that prints
// its accounts as JSON and runs until SIGTERM. `accounts SPEC DIR SETTLE_MS QUIET_MS [--heap]`: opens
// and starts one whole account runtime per account of SPEC (its own Config from an accounts file in
// DIR, mirrors under DIR, one checkpoint thread), waits for every first sweep, then measures the
// process over a quiet period and prints the figures as JSON (--heap: the heap's growth by name).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { getHeapSnapshot } from 'node:v8'
import { startEmulator } from '../emulator/index.js'
import { loadAccounts } from '../src/config/index.js'
import type { AccountRuntime } from '../src/daemon/account-runtime.js'
import { AccountSet } from '../src/daemon/account-set.js'
import { createLogger } from '../src/log/logger.js'
import { startCheckpointService } from '../src/store/sqlite/background-checkpoints.js'

export interface Spec {
  url: string
  accounts: { id: string; apiKey: string; controlUrl: string }[]
}
const gc = (globalThis as { gc?: () => void }).gc
const sample = () => {
  gc?.()
  const m = process.memoryUsage()
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    fds: readdirSync('/proc/self/fd').length,
    /** The most RSS so far (VmHWM). */
    peakRss: Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024,
  }
}
const resources = () => {
  const out: Record<string, number> = {}
  for (const r of process.getActiveResourcesInfo()) out[r] = (out[r] ?? 0) + 1
  return out
}

/** Self size of the heap by node type and name (constructor for objects), from a snapshot. */
async function heapByName(): Promise<Map<string, number>> {
  gc?.()
  const chunks: Buffer[] = []
  for await (const c of getHeapSnapshot()) chunks.push(c as Buffer)
  const snap = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }
    nodes: number[]
    strings: string[]
  }
  const fields = snap.snapshot.meta.node_fields
  const [types] = snap.snapshot.meta.node_types
  const width = fields.length
  const [t, n, s] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number]
  const out = new Map<string, number>()
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + t]!]!
    const name = type === 'object' || type === 'native' ? snap.strings[snap.nodes[i + n]!]! : `(${type})`
    out.set(name, (out.get(name) ?? 0) + snap.nodes[i + s]!)
  }
  return out
}

async function requestsOf(spec: Spec): Promise<number[]> {
  const out: number[] = []
  for (const a of spec.accounts) {
    const res = await fetch(`${a.controlUrl}/counters`)
    const body = (await res.json()) as { data: Record<string, number> }
    out.push(body.data['requests.total'] ?? 0)
  }
  return out
}

async function emulatorMode(n: number, rows: number): Promise<void> {
  const emu = await startEmulator({ accounts: n, rows })
  const spec: Spec = { url: emu.url, accounts: emu.accounts.map((a) => ({ id: a.id, apiKey: a.apiKey, controlUrl: a.controlUrl })) }
  process.stdout.write(JSON.stringify(spec) + '\n')
  process.once('SIGTERM', () => void emu.close().then(() => process.exit(0)))
}

async function accountsMode(spec: Spec, dir: string, settleMs: number, quietMs: number, heap: boolean): Promise<void> {
  const env: Record<string, string> = {}
  const list = spec.accounts.map((a, i) => {
    env[`ACCT_KEY_${i}`] = a.apiKey
    return { id: a.id, baseUrl: spec.url, apiKeyEnv: `ACCT_KEY_${i}` }
  })
  const file = path.join(dir, 'accounts.json')
  writeFileSync(file, JSON.stringify({ dataDir: path.join(dir, 'data'), accounts: list }))
  const loaded = loadAccounts({ file, env })
  // Warnings and errors counted (and the first few shown), not printed a thousand times.
  const logged: Record<string, number> = {}
  const shown: string[] = []
  const destination = new Writable({
    write: (chunk: Buffer, _e, cb) => {
      for (const line of chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')) {
        const { level, msg } = JSON.parse(line) as { level: number; msg: string }
        logged[level] = (logged[level] ?? 0) + 1
        if (shown.length < 5) shown.push(`${level} ${msg}`)
      }
      cb()
    },
  })
  const logger = createLogger({ level: 'warn', destination })
  const before = heap ? await heapByName() : undefined
  const start = sample()
  const checkpoints = startCheckpointService({ logger })
  const t0 = performance.now()
  // The daemon's account set: first sweeps take turns, idle mirrors are parked within the cap on
  // open mirrors (FSM_BENCH_PARKING=0: no parking, no cap).
  const parking = process.env.FSM_BENCH_PARKING !== '0'
  const set = new AccountSet({
    logger,
    checkpoints,
    ...(parking ? {} : { parking: () => ({ idleMs: Number.POSITIVE_INFINITY, maxOpen: Number.POSITIVE_INFINITY }) }),
  })
  await set.open(loaded.accounts)
  let runtimes: AccountRuntime[] = [...set.runtimes.values()]
  const openMs = performance.now() - t0
  const opened = sample()
  const t1 = performance.now()
  const backfillCpu = process.cpuUsage()
  set.start()
  // An account whose open or start failed (too many open files) is tried again with a new runtime:
  // every account's current one, once all are running.
  for (;;) {
    await Promise.all(runtimes.map((r) => Promise.all([r.firstSweep, r.referenceAtStart])))
    const now = [...set.runtimes.values()]
    if (now.length === loaded.accounts.length && now.every((r, i) => r === runtimes[i])) break
    runtimes = now
    await sleep(1_000)
  }
  const backfillMs = performance.now() - t1
  const backfillCpuUs = process.cpuUsage(backfillCpu)
  const backfilled = sample()
  // Read in each mirror's slot, as a run would (not every mirror opened at once).
  let rows = 0
  for (const r of runtimes)
    rows += await set.slots.hold(r.id, () =>
      Promise.resolve((r.app.mirror.sqlite.prepare('SELECT count(*) AS n FROM clients').get() as { n: number }).n),
    )
  await sleep(settleMs)
  const requestsBefore = await requestsOf(spec)
  const checks = () =>
    runtimes.reduce(
      (a, r) => {
        const s = r.checkpoints.stats()
        return { passes: a.passes + s.passes, micros: a.micros + s.micros }
      },
      { passes: 0, micros: 0 },
    )
  const checksBefore = checks()
  const cpu = process.cpuUsage()
  const t2 = performance.now()
  await sleep(quietMs)
  const quietCpu = process.cpuUsage(cpu)
  const quietMsActual = performance.now() - t2
  const checksAfter = checks()
  const requestsAfter = await requestsOf(spec)
  const quiet = sample()
  const active = resources()
  const after = heap ? await heapByName() : undefined
  const parked = runtimes.filter((r) => !r.activity().open).length
  const peakOpenMirrors = set.slots.highWater
  const ready = (await Promise.all(runtimes.map((r) => r.ready()))).filter((a) => a.ready).length
  await set.stop()
  await checkpoints.stop()
  const heapGrowth =
    before === undefined || after === undefined
      ? undefined
      : Object.fromEntries(
          [...after.entries()]
            .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 40),
        )
  process.stdout.write(
    JSON.stringify({
      n: runtimes.length,
      openMs,
      backfillMs,
      backfillCpuMicros: backfillCpuUs.user + backfillCpuUs.system,
      clientRows: rows,
      start,
      opened,
      backfilled,
      quiet,
      quietMs: quietMsActual,
      quietCpuMicros: quietCpu.user + quietCpu.system,
      quietCpuSystemMicros: quietCpu.system,
      checkpointPasses: checksAfter.passes - checksBefore.passes,
      checkpointMicros: checksAfter.micros - checksBefore.micros,
      requests: requestsAfter.map((x, i) => x - requestsBefore[i]!),
      active,
      ready,
      logged,
      shown,
      heapGrowth,
      parked,
      peakOpenMirrors,
    }) + '\n',
  )
}

const [mode, ...args] = process.argv.slice(2)
if (mode === 'emulator') await emulatorMode(Number(args[0]), Number(args[1]))
else if (mode === 'accounts')
  await accountsMode(
    JSON.parse(readFileSync(args[0]!, 'utf8')) as Spec,
    args[1]!,
    Number(args[2]),
    Number(args[3]),
    args.includes('--heap'),
  )
else throw new Error(`unknown mode ${String(mode)}`)
