// What one open, idle mirror costs a process, for many accounts in one daemon: RSS and file
// descriptors per mirror with 1, 10 and 100 mirrors open (writer connection, a little data each,
// every mirror registered with one shared checkpoint thread), then with one reader each, and the
// CPU the idle mirrors take. Each size runs in a child process of its own (mirror-cost-child.ts).
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { BenchResult, Figure } from './lib.js'

const CHILD = fileURLToPath(new URL('./mirror-cost-child.ts', import.meta.url))

interface Sample {
  rss: number
  fds: number
}
interface Run {
  n: number
  start: Sample
  opened: Sample
  registered: Sample
  withReaders: Sample
  idleCpuMicrosPerSecond: number
  idleCheckMicrosPerSecond: number
  errors: number
}

function child(n: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD, String(n)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    p.stdout.on('data', (c: Buffer) => (out += c.toString()))
    p.on('error', reject)
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Run) : reject(new Error(`mirror-cost child (${n}) exited ${code}`))))
  })
}

const MiB = 2 ** 20
const round = (x: number, digits = 2) => Number(x.toFixed(digits))

export default async function mirrorCost(): Promise<BenchResult> {
  const runs: Run[] = []
  for (const n of [1, 10, 100]) runs.push(await child(n))
  const figures: Figure[] = []
  for (const r of runs) {
    figures.push(
      {
        metric: `RSS per mirror, ${r.n} open (writer + checkpoint thread)`,
        value: round((r.registered.rss - r.start.rss) / r.n / MiB),
        unit: 'MiB',
        goal: '',
      },
      {
        metric: `fds per mirror, ${r.n} open (writer + checkpoint thread)`,
        value: round((r.registered.fds - r.start.fds) / r.n, 1),
        unit: 'fds',
        goal: '',
      },
      {
        metric: `idle CPU per mirror, ${r.n} open (whole process)`,
        value: round(r.idleCpuMicrosPerSecond / r.n, 0),
        unit: 'µs/s',
        goal: '',
      },
    )
  }
  const [, ten, hundred] = runs as [Run, Run, Run]
  // Marginal costs: between 10 and 100 mirrors, what each one more adds, step by step.
  const step = (a: keyof Run, b: keyof Run, what: 'rss' | 'fds') =>
    ((hundred[b] as Sample)[what] - (hundred[a] as Sample)[what] - ((ten[b] as Sample)[what] - (ten[a] as Sample)[what])) / 90
  figures.push(
    { metric: 'one more mirror: writer connection, RSS', value: round(step('start', 'opened', 'rss') / MiB), unit: 'MiB', goal: '' },
    { metric: 'one more mirror: writer connection, fds', value: round(step('start', 'opened', 'fds'), 1), unit: 'fds', goal: '' },
    {
      metric: "one more mirror: the checkpoint thread's connection, RSS",
      value: round(step('opened', 'registered', 'rss') / MiB),
      unit: 'MiB',
      goal: '',
    },
    {
      metric: "one more mirror: the checkpoint thread's connection, fds",
      value: round(step('opened', 'registered', 'fds'), 1),
      unit: 'fds',
      goal: '',
    },
    {
      metric: 'one more mirror: a reader connection, RSS',
      value: round(step('registered', 'withReaders', 'rss') / MiB),
      unit: 'MiB',
      goal: '',
    },
    {
      metric: 'one more mirror: a reader connection, fds',
      value: round(step('registered', 'withReaders', 'fds'), 1),
      unit: 'fds',
      goal: '',
    },
    {
      metric: 'the checkpoint thread itself (RSS, 1 mirror registered minus its connection)',
      value: round((runs[0]!.registered.rss - runs[0]!.opened.rss - step('opened', 'registered', 'rss')) / MiB),
      unit: 'MiB',
      goal: '',
    },
  )
  return {
    name: 'mirror-cost',
    topic: 'mirror',
    figures,
    notes: [
      `Each mirror: real migrations, 200 rows of 2 KB written, then idle; writer page cache bounded at WRITER_CACHE_KIB, readers at READER_CACHE_KIB (mirror-database.ts). A connection's cache grows to its bound only as pages are read.`,
      `Idle CPU of the whole process over 3 s with every mirror settled: ${runs.map((r) => `${r.n} mirrors ${round(r.idleCpuMicrosPerSecond / 1000, 1)} ms/s (checks on the thread ${round(r.idleCheckMicrosPerSecond / 1000, 1)} ms/s)`).join(', ')}.`,
      `Run from source: the checkpoint thread loads tsx, which a build (dist/) does not; the thread's own figure is smaller there. Checkpoint errors: ${runs.reduce((s, r) => s + r.errors, 0)}.`,
    ],
  }
}
