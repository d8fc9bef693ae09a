// Cold start of the compiled CLI (`npm run build`, then `node bin/fsm-sync.js`): wall time of
// `--version`, `--help`, `query "select 1"` and `status` on a small synced mirror, each as a ratio
// to `node -e 0` measured in the same rounds (the commands and the baseline alternate, so load on
// the machine hits all alike; the median of each counts). Peak RSS is read from /proc at exit.
import { execFileSync, spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { openMirror } from '../src/store/sqlite/mirror-database.js'
import { SyncStateStore } from '../src/store/repositories/sync-state.js'
import { atMost, type BenchResult, type Figure } from './lib.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/fsm-sync.js')
const ROUNDS = 15
/** Preloaded into every child (the baseline too): its peak RSS at exit. */
const EXIT_HOOK = `process.on('exit',()=>{const fs=require('fs');const m=/VmHWM:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status','utf8'));fs.writeSync(2,'\\npeak-rss-kb '+(m?m[1]:'0')+'\\n')})`

const CASES: { name: string; args: string[]; goal?: number }[] = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: '--version', args: [BIN, '--version'], goal: 3 },
  { name: '--help', args: [BIN, '--help'], goal: 3 },
  { name: 'query "select 1"', args: [BIN, 'query', 'select 1'], goal: 4 },
  { name: 'status', args: [BIN, 'status'], goal: 4 },
]

export default async function (): Promise<BenchResult> {
  // The figures are the built bin's: build what is checked out first.
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' })
  const dir = path.join(os.tmpdir(), `fsm-cold-start-${process.pid}`)
  const db = path.join(dir, 'fsm-mirror.db')
  const mirror = await openMirror(db)
  const state = new SyncStateStore(mirror.sqlite)
  const now = new Date().toISOString()
  state.finishRun(state.startRun('sweep', 'jobs', now), { outcome: 'success', rows: 0, requests: 1 }, now)
  await mirror.close()

  const hook = path.join(dir, 'peak-rss.cjs')
  writeFileSync(hook, EXIT_HOOK)
  const env: Record<string, string> = { FSM_DB: db, FSM_LOG_LEVEL: 'warn', NODE_OPTIONS: `--require ${hook}` }
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FSM_') && k !== 'NODE_OPTIONS') env[k] = v
  const run = (args: string[]): { ms: number; rssKb: number; cpuMs: number } => {
    const t = performance.now()
    const r = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8' })
    const ms = performance.now() - t
    if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`)
    // CPU time, whole process from exec to exit: bash's `times` for its one child (getrusage).
    const timed = spawnSync('bash', ['-c', '"$@" >/dev/null 2>&1; times', 'bash', process.execPath, ...args], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
    })
    const t2 = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s\s*$/.exec(timed.stdout.trim())
    const cpuMs = t2 === null ? NaN : (Number(t2[1]) * 60 + Number(t2[2]) + Number(t2[3]) * 60 + Number(t2[4])) * 1000
    return { ms, rssKb: Number(/peak-rss-kb (\d+)/.exec(r.stderr)?.[1] ?? 0), cpuMs }
  }
  const loadBefore = os.loadavg()
  for (const c of CASES) run(c.args)
  const times = new Map<string, number[]>(CASES.map((c) => [c.name, []]))
  const rss = new Map<string, number[]>(CASES.map((c) => [c.name, []]))
  const cpu = new Map<string, number[]>(CASES.map((c) => [c.name, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of CASES) {
      const m = run(c.args)
      times.get(c.name)!.push(m.ms)
      rss.get(c.name)!.push(m.rssKb)
      cpu.get(c.name)!.push(m.cpuMs)
    }
  }
  const loadAfter = os.loadavg()
  rmSync(dir, { recursive: true, force: true })

  const base = median(times.get('node -e 0')!)
  const baseCpu = median(cpu.get('node -e 0')!)
  const figures: Figure[] = CASES.filter((c) => c.goal !== undefined).flatMap((c) => {
    const ms = median(times.get(c.name)!)
    const ratio = Math.round((ms / base) * 100) / 100
    const cpuMs = median(cpu.get(c.name)!)
    const cpuRatio = Math.round((cpuMs / baseCpu) * 100) / 100
    const wall: Figure = {
      metric: `fsm-sync ${c.name}, wall time / node -e 0`,
      value: ratio,
      unit: 'ratio',
      ...atMost(ratio, c.goal!),
      baseline: `node -e 0 ${base.toFixed(0)} ms, this ${ms.toFixed(0)} ms; peak RSS ${Math.round(median(rss.get(c.name)!) / 1024)} MB (node -e 0 ${Math.round(median(rss.get('node -e 0')!) / 1024)} MB)`,
    }
    // The process's CPU time (user + system): what load on the machine changes least.
    const own: Figure = {
      metric: `fsm-sync ${c.name}, CPU time / node -e 0`,
      value: cpuRatio,
      unit: 'ratio',
      goal: '',
      baseline: `node -e 0 ${baseCpu.toFixed(0)} ms, this ${cpuMs.toFixed(0)} ms`,
    }
    return [wall, own]
  })
  return {
    name: 'cold-start',
    topic: 'cli',
    figures,
    notes: [
      `Medians of ${ROUNDS} alternating rounds of the compiled bin on a mirror with one successful run; load average (1, 5, 15 min) ${fmt(loadBefore)} before and ${fmt(loadAfter)} after.`,
      `The environment is the caller's (without FSM_* and NODE_OPTIONS), the same for the baseline: NODE_EXTRA_CA_CERTS is ${process.env.NODE_EXTRA_CA_CERTS === undefined ? 'unset' : 'set (every process, the baseline included, reads the CA file: about 30 ms of CPU)'}.`,
    ],
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? 0
}

const fmt = (load: number[]) => load.map((l) => l.toFixed(2)).join(' ')
