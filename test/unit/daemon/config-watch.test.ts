// The config watcher over real files in a temporary folder, its poll driven by the FakeClock and
// SIGHUP by an injected emitter (test/integration/daemon/config-watch-signal.test.ts sends a real
// one): each way a file gets replaced, a key file, an invalid file, loads that never overlap, stop.
import { EventEmitter } from 'node:events'
import { mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Writable } from 'node:stream'
import { afterEach, describe, expect, test } from 'vitest'
import { ConfigWatch, HINT_SETTLE_MS, POLL_MS } from '../../../src/daemon/config-watch.js'
import { createLogger } from '../../../src/log/logger.js'
import { FakeClock } from '../../support/fake-clock.js'
import { tempDir } from '../../support/temp-mirror.js'

interface Cfg {
  accounts: string[]
  keyFile?: string
  key?: string
}

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

/** Waits (real time) for I/O the watcher started; fails after 5 s. */
async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10))
  if (!cond()) throw new Error(`never: ${what}`)
}

/** Lets a started stat/load finish when nothing is expected to happen. */
const settle = () => new Promise((r) => setTimeout(r, 50))

/** inotify watches this process holds (each fs.watch adds one to the loop's single inotify descriptor). */
function inotifyWatches(): number {
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    let link: string
    try {
      link = readlinkSync(`/proc/self/fd/${fd}`)
    } catch {
      continue
    }
    if (link.includes('inotify'))
      n += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('inotify wd:')).length
  }
  return n
}

interface Setup {
  /** The folder that holds config.json (a symlink into `..data` with `kube`). */
  dir: string
  file: string
  kube?: boolean
  pollMs?: number
  hint?: boolean
  /** The loader waits for this after reading, so a test can hold a load in flight. */
  gate?: Promise<void>
  /** Applies that throw before one succeeds. */
  applyFailures?: number
}

async function watching(s: Partial<Setup> = {}) {
  const dir = s.dir ?? tempDir('fsm-watch-')
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'config.json')
  if (s.kube === true) {
    // As a Kubernetes ConfigMap volume lays it out.
    mkdirSync(path.join(dir, '..2026_11_27_01'))
    writeFileSync(path.join(dir, '..2026_11_27_01', 'config.json'), JSON.stringify({ accounts: ['a'] }))
    symlinkSync('..2026_11_27_01', path.join(dir, '..data'))
    symlinkSync('..data/config.json', file)
  } else writeFileSync(file, JSON.stringify({ accounts: ['a'] }))
  const clock = new FakeClock()
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write: (c: Buffer, _e, cb) => (lines.push(JSON.parse(c.toString('utf8')) as Record<string, unknown>), cb()),
    }),
  })
  const signals = new EventEmitter()
  const applied: Cfg[] = []
  const stats = { loads: 0, reads: 0, active: 0, maxActive: 0 }
  let started = false
  let failures = s.applyFailures ?? 0
  const load = async (): Promise<Cfg> => {
    stats.loads++
    stats.active++
    stats.maxActive = Math.max(stats.maxActive, stats.active)
    try {
      const cfg = JSON.parse(await readFile(file, 'utf8')) as Cfg
      if (!Array.isArray(cfg.accounts)) throw new Error('accounts: expected a list of accounts')
      if (cfg.keyFile !== undefined) cfg.key = await readFile(path.join(dir, cfg.keyFile), 'utf8')
      stats.reads++
      if (started) await s.gate
      return cfg
    } finally {
      stats.active--
    }
  }
  const watch = new ConfigWatch<Cfg>({
    path: file,
    load,
    apply: (next) => {
      if (failures-- > 0) throw new Error('account b: the mirror folder is not writable')
      applied.push(next)
    },
    files: (v) => (v.keyFile === undefined ? [] : [path.join(dir, v.keyFile)]),
    clock,
    logger,
    signals,
    hint: s.hint ?? false,
    ...(s.pollMs === undefined ? {} : { pollMs: s.pollMs }),
  })
  cleanups.push(() => watch.stop())
  const first = await load()
  stats.loads = 0
  stats.reads = 0
  await watch.start(first)
  started = true
  return { dir, file, clock, lines, signals, applied, stats, watch }
}

const A2 = JSON.stringify({ accounts: ['b'] }) // the same length as the first file

const CHANGES = {
  'a write in place': (dir: string) => writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ accounts: ['a', 'b'] })),
  'a rename over the file': (dir: string) => {
    writeFileSync(path.join(dir, '.config.json.tmp'), A2)
    renameSync(path.join(dir, '.config.json.tmp'), path.join(dir, 'config.json'))
  },
  'a swap of the ..data symlink': (dir: string) => {
    mkdirSync(path.join(dir, '..2026_11_27_02'))
    writeFileSync(path.join(dir, '..2026_11_27_02', 'config.json'), A2)
    symlinkSync('..2026_11_27_02', path.join(dir, '..data_tmp'))
    renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'))
    rmSync(path.join(dir, '..2026_11_27_01'), { recursive: true })
  },
} as const
const kinds = Object.keys(CHANGES) as (keyof typeof CHANGES)[]
const kube = (k: keyof typeof CHANGES) => k === 'a swap of the ..data symlink'

describe('a change is applied by the poll, with no help from fs.watch', () => {
  test.each(kinds)('%s', async (kind) => {
    const w = await watching({ kube: kube(kind) })
    await w.clock.advance(3 * POLL_MS)
    await settle()
    expect(w.stats.loads).toBe(0)
    CHANGES[kind](w.dir)
    // One poll's worth of time (2 s; the goal is 10 s), then only the I/O it started.
    await w.clock.advance(POLL_MS)
    await until('applied', () => w.applied.length === 1)
    expect(w.watch.current).toEqual(JSON.parse(readFileSync(w.file, 'utf8')))
    expect(w.lines.map((l) => l.msg)).toContain('configuration reloaded')
  })

  test('a key file the configuration names', async () => {
    const dir = tempDir('fsm-watch-')
    writeFileSync(path.join(dir, 'key'), 'k1')
    const w = await watching({ dir })
    writeFileSync(w.file, JSON.stringify({ accounts: ['a'], keyFile: 'key' }))
    await w.watch.reload()
    expect(w.applied).toEqual([{ accounts: ['a'], keyFile: 'key', key: 'k1' }])
    writeFileSync(path.join(dir, 'key'), 'k2')
    await w.clock.advance(POLL_MS)
    await until('the rotated key applied', () => w.applied.length === 2)
    expect(w.watch.current.key).toBe('k2')
  })
})

test.each(kinds)('fs.watch makes %s seen long before the poll', async (kind) => {
  const w = await watching({ kube: kube(kind), hint: true, pollMs: 24 * 3_600_000 })
  CHANGES[kind](w.dir)
  // Only the hint arms a timer this close; the poll is a day away.
  for (let i = 0; i < 500 && w.applied.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 10))
    await w.clock.advance(HINT_SETTLE_MS)
  }
  expect(w.applied).toHaveLength(1)
})

test('SIGHUP loads at once, also when nothing changed; an equal value is not applied', async () => {
  const w = await watching()
  w.signals.emit('SIGHUP')
  await until('loaded', () => w.stats.loads === 1)
  await settle()
  expect(w.applied).toEqual([])
  writeFileSync(w.file, A2)
  w.signals.emit('SIGHUP')
  await until('applied', () => w.applied.length === 1)
  expect(w.applied).toEqual([{ accounts: ['b'] }])
  expect(w.lines.filter((l) => l.msg === 'configuration reload requested')).toHaveLength(2)
})

test('an invalid file is refused with one error line and the running value is kept', async () => {
  const w = await watching()
  writeFileSync(w.file, '{"accounts": "a"}')
  await w.clock.advance(POLL_MS)
  await until('refused', () => w.lines.some((l) => l.level === 'error'))
  // Later polls over the same bad file neither load nor log again.
  await w.clock.advance(10 * POLL_MS)
  await settle()
  const errors = w.lines.filter((l) => l.level === 'error')
  expect(errors).toEqual([
    expect.objectContaining({
      path: w.file,
      msg: 'configuration not reloaded: accounts: expected a list of accounts; keeping the running accounts',
    }),
  ])
  expect(w.stats.loads).toBe(1)
  expect(w.applied).toEqual([])
  expect(w.watch.current).toEqual({ accounts: ['a'] })
  writeFileSync(w.file, A2)
  await w.clock.advance(POLL_MS)
  await until('applied', () => w.applied.length === 1)
})

test('an apply that throws is logged, the running value is kept, and SIGHUP tries again', async () => {
  const w = await watching({ applyFailures: 1 })
  writeFileSync(w.file, A2)
  await w.watch.reload()
  expect(w.lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
    'configuration loaded but not applied: account b: the mirror folder is not writable; the next change or SIGHUP tries again',
  ])
  expect(w.watch.current).toEqual({ accounts: ['a'] })
  await w.watch.reload()
  expect(w.applied).toEqual([{ accounts: ['b'] }])
  expect(w.watch.current).toEqual({ accounts: ['b'] })
})

describe('loads never overlap', () => {
  test('requests during a load wait for it; a change made meanwhile is loaded after it', async () => {
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const w = await watching({ gate })
    writeFileSync(w.file, A2)
    const first = w.watch.reload()
    await until('the first load read the file', () => w.stats.reads === 1)
    w.signals.emit('SIGHUP')
    w.signals.emit('SIGHUP')
    await w.clock.advance(3 * POLL_MS)
    writeFileSync(w.file, JSON.stringify({ accounts: ['c'] }))
    open()
    await first
    await until('both applied', () => w.applied.length === 2)
    await settle()
    expect(w.stats.maxActive).toBe(1)
    expect(w.applied).toEqual([{ accounts: ['b'] }, { accounts: ['c'] }])
    expect(w.stats.loads).toBe(2)
  })

  test('with nothing asked meanwhile, the check after a load sees a change made while it read', async () => {
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const w = await watching({ gate })
    writeFileSync(w.file, A2)
    await w.clock.advance(POLL_MS)
    await until('the load read the file', () => w.stats.reads === 1)
    writeFileSync(w.file, JSON.stringify({ accounts: ['c'] }))
    open()
    // No more time passes: the second load comes from the check that follows the first.
    await until('both applied', () => w.applied.length === 2)
    expect(w.applied).toEqual([{ accounts: ['b'] }, { accounts: ['c'] }])
  })
})

describe('stop', () => {
  test('leaves no timer, no fs watch and no signal handler, and nothing loads afterwards', async () => {
    const before = inotifyWatches()
    const w = await watching({ hint: true })
    expect(w.clock.pending).toBe(1)
    expect(w.signals.listenerCount('SIGHUP')).toBe(1)
    expect(inotifyWatches()).toBe(before + 1)
    await w.watch.stop()
    expect(w.clock.pending).toBe(0)
    expect(w.signals.listenerCount('SIGHUP')).toBe(0)
    expect(inotifyWatches()).toBe(before)
    writeFileSync(w.file, A2)
    await w.clock.advance(3 * POLL_MS)
    await w.watch.reload()
    await settle()
    expect(w.stats.loads).toBe(0)
  })

  test('waits for a load in flight and applies nothing after it', async () => {
    let open!: () => void
    const gate = new Promise<void>((r) => (open = r))
    const w = await watching({ gate })
    writeFileSync(w.file, A2)
    void w.watch.reload()
    await until('loading', () => w.stats.active === 1)
    let stopped = false
    const stopping = w.watch.stop().then(() => (stopped = true))
    await settle()
    expect(stopped).toBe(false)
    open()
    await stopping
    expect(w.applied).toEqual([])
    expect(w.clock.pending).toBe(0)
  })
})
