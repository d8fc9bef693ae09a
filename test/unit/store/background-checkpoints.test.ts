// Checkpoints on a worker thread, against real mirror files: committed rows reach the database file
// while the writer never checkpoints itself, the writer's own setting comes back when the worker
// stops or cannot start, one thread serves many mirrors, and the data survives it all.
import { copyFileSync, existsSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { afterEach, expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import {
  startBackgroundCheckpoints,
  startCheckpointService,
  type BackgroundCheckpoints,
  type CheckpointService,
} from '../../../src/store/sqlite/background-checkpoints.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
let checkpoints: BackgroundCheckpoints | undefined
let service: CheckpointService | undefined
let others: TempMirror[] = []
afterEach(async () => {
  await checkpoints?.stop()
  await service?.stop()
  for (const m of [mirror, ...others]) await m?.dispose()
  checkpoints = mirror = service = undefined
  others = []
})

function captureLogger(): { logger: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = []
  const logger = createLogger({ level: 'info', destination: { write: (s: string) => void chunks.push(s) } })
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

/** Polls `check`; a throw counts as "not yet" (a copy taken while a pass was writing the file is torn). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    try {
      if (check()) return
    } catch {
      // try again after the pass
    }
    await sleep(10)
  }
  throw new Error(`timed out waiting for ${what}`)
}

function writeRows(sqlite: TempMirror['sqlite'], from: number, count: number): void {
  const insert = sqlite.prepare(`INSERT INTO webhook_state (key, value, updated_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z')`)
  sqlite.transaction(() => {
    for (let i = from; i < from + count; i++) insert.run(`k${i}`, 'x'.repeat(2_000))
  })()
}

/** Rows of webhook_state in the database file alone, as a copy without its -wal opens (0 before the table is there). */
let copies = 0
function rowsInFileAlone(m: TempMirror): number {
  const copy = path.join(m.dir, `file-alone-${copies++}.db`)
  copyFileSync(m.path, copy)
  expect(existsSync(`${copy}-wal`)).toBe(false)
  const db = new Database(copy, { readonly: true })
  try {
    if (db.prepare(`SELECT count(*) FROM sqlite_master WHERE name = 'webhook_state'`).pluck().get() === 0) return 0
    return db.prepare('SELECT count(*) FROM webhook_state').pluck().get() as number
  } finally {
    db.close()
  }
}

test('the worker copies committed frames into the database file; the writer itself never checkpoints', async () => {
  mirror = await tempMirror()
  // Far above what this test writes: any checkpoint that happens is the worker's.
  mirror.sqlite.pragma('wal_autocheckpoint = 100000')
  checkpoints = startBackgroundCheckpoints({
    sqlite: mirror.sqlite,
    logger: createLogger({ level: 'silent' }),
    everyMs: 10,
    backstopFrames: 50_000,
  })
  expect(checkpoints.running).toBe(true)
  expect(mirror.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(50_000)
  expect(rowsInFileAlone(mirror)).toBe(0)

  writeRows(mirror.sqlite, 0, 300)
  // The counters move when a pass returns, after it wrote the file: wait for both.
  await until(() => checkpoints!.stats().copiedFrames > 100 && rowsInFileAlone(mirror!) === 300, 'the rows to reach the database file')
  const stats = checkpoints.stats()
  expect(stats.passes).toBeGreaterThan(0)
  expect(stats.copiedFrames).toBeGreaterThan(100)
  expect(stats.errors).toBe(0)

  // The writer goes on committing during passes; nothing is lost or doubled.
  for (let i = 1; i <= 10; i++) {
    writeRows(mirror.sqlite, i * 1_000, 50)
    await sleep(3)
  }
  await until(() => rowsInFileAlone(mirror!) === 800, 'the later rows to reach the database file')
  expect(mirror.sqlite.prepare('SELECT count(*) FROM webhook_state').pluck().get()).toBe(800)

  await checkpoints.stop()
  expect(checkpoints.running).toBe(false)
  expect(mirror.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(100_000)
})

test("with the worker passing beside steady writes, the writer's backstop still restarts the log: it stays bounded", async () => {
  mirror = await tempMirror()
  checkpoints = startBackgroundCheckpoints({
    sqlite: mirror.sqlite,
    logger: createLogger({ level: 'silent' }),
    everyMs: 5,
    backstopFrames: 200,
  })
  // The backstop is what restarts the log: the worker's pass rarely ends between two commits.
  expect(mirror.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(200)
  // A loaded machine can take a while to start the thread: the writes below are meant to meet passes.
  await until(() => checkpoints!.stats().passes > 0, 'the first pass')
  let most = 0
  for (let i = 0; i < 200; i++) {
    writeRows(mirror.sqlite, i * 10, 10)
    most = Math.max(most, checkpoints.stats().logFrames)
    await sleep(1)
  }
  expect(mirror.sqlite.prepare('SELECT count(*) FROM webhook_state').pluck().get()).toBe(2_000)
  const stats = checkpoints.stats()
  expect(stats.passes).toBeGreaterThan(10)
  // Passes that meet the backstop's checkpoint are skipped and counted, never errors.
  expect(stats.errors).toBe(0)
  // 2,000 rows of 2 KB are about 1,000 pages; a log that never restarted would hold all of them.
  expect(most).toBeLessThan(600)
  // The file itself: a log that restarts is overwritten from its start instead of appended to.
  expect(statSync(`${mirror.path}-wal`).size).toBeLessThan(600 * 4_120)
})

test('a worker that cannot open the mirror gives the writer its own checkpoints back, with a clear log line', async () => {
  mirror = await tempMirror()
  const before = mirror.sqlite.pragma('wal_autocheckpoint', { simple: true })
  // The mirror was moved while open: the writer keeps its descriptors, the worker finds no file.
  renameSync(mirror.path, `${mirror.path}.moved`)
  const { logger, lines } = captureLogger()
  checkpoints = startBackgroundCheckpoints({ sqlite: mirror.sqlite, logger, everyMs: 10 })
  await until(() => !checkpoints!.running, 'the worker to give up')
  expect(mirror.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(before)
  const line = lines().find((l) => String(l.msg).startsWith('background checkpoints stopped'))
  expect(line?.msg).toMatch(/could not open the mirror.*the writer checkpoints on its own again/)
  renameSync(`${mirror.path}.moved`, mirror.path)
})

test('an in-memory database has no log to checkpoint: nothing starts', async () => {
  const sqlite = new Database(':memory:')
  const none = startBackgroundCheckpoints({ sqlite, logger: createLogger({ level: 'silent' }) })
  expect(none.running).toBe(false)
  await none.stop()
  sqlite.close()
})

/** Threads of this process (vitest runs each file in a process of its own). */
const threads = () => readdirSync('/proc/self/task').length

test('one thread checkpoints every registered mirror; a mirror with nothing new costs no pass', async () => {
  others = [await tempMirror(), await tempMirror(), await tempMirror()]
  for (const m of others) m.sqlite.pragma('wal_autocheckpoint = 100000')
  service = startCheckpointService({ logger: createLogger({ level: 'silent' }), everyMs: 10 })
  const before = threads()
  const first = service.register(others[0]!.sqlite, { backstopFrames: 50_000 })
  await until(() => first.stats().passes + first.stats().idle > 0, 'the thread to start')
  const withOne = threads()
  expect(withOne).toBeGreaterThan(before)
  const handles = [first, ...others.slice(1).map((m) => service!.register(m.sqlite, { backstopFrames: 50_000 }))]
  expect(service.mirrors).toBe(3)
  others.forEach((m, i) => writeRows(m.sqlite, i * 1_000, 300))
  await until(
    () => others.every((m, i) => handles[i]!.stats().copiedFrames > 100 && rowsInFileAlone(m) === 300),
    "every mirror's rows to reach its database file",
  )
  // Two more mirrors, no more threads.
  expect(threads()).toBe(withOne)
  for (const h of handles) expect(h.stats().errors).toBe(0)

  // Mirrors nobody writes to are skipped once settled, while a busy one keeps being checkpointed.
  const quiet = handles.slice(1)
  await until(() => quiet.every((h) => h.stats().idle > 0), 'the quiet mirrors to settle')
  const passes = quiet.map((h) => h.stats().passes)
  const idle = quiet.map((h) => h.stats().idle)
  writeRows(others[0]!.sqlite, 5_000, 100)
  await until(() => rowsInFileAlone(others[0]!) === 400 && quiet.every((h, i) => h.stats().idle > idle[i]! + 5), 'more passes')
  expect(quiet.map((h) => h.stats().passes)).toEqual(passes)

  // One mirror leaves: its writer gets its own setting back, the others go on.
  await handles[1]!.stop()
  expect(handles[1]!.running).toBe(false)
  expect(others[1]!.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(100_000)
  expect(service.mirrors).toBe(2)
  writeRows(others[2]!.sqlite, 6_000, 100)
  await until(() => rowsInFileAlone(others[2]!) === 400, 'the third mirror to be checkpointed still')
})

test('a mirror moved, replaced by garbage or deleted does not stop the checkpoints of the others', async () => {
  others = [await tempMirror(), await tempMirror(), await tempMirror(), await tempMirror()]
  const [healthy, moved, garbage, deleted] = others as [TempMirror, TempMirror, TempMirror, TempMirror]
  const { logger, lines } = captureLogger()
  service = startCheckpointService({ logger, everyMs: 10 })
  const gone = service.register(deleted.sqlite)
  // Moved while open: the writer keeps its descriptors, the thread finds no file.
  renameSync(moved.path, `${moved.path}.moved`)
  // Another file where the mirror was: not a database (its -wal and -shm moved too, or they would
  // still name the old log).
  const parts = ['', '-wal', '-shm'].map((suffix) => garbage.path + suffix)
  for (const p of parts) renameSync(p, `${p}.moved`)
  writeFileSync(garbage.path, Buffer.alloc(8_192, 7))
  const handles = [healthy, moved, garbage].map((m) => service!.register(m.sqlite))
  await until(() => !handles[1]!.running && !handles[2]!.running, 'the thread to give up the two it cannot open')
  // Deleted while the thread has it open.
  await deleted.dispose()
  writeRows(healthy.sqlite, 0, 300)
  await until(() => rowsInFileAlone(healthy) === 300, "the healthy mirror's rows to reach its file")
  expect(handles[0]!.running).toBe(true)
  expect(gone.stats().errors).toBe(0)
  const stopped = lines().filter((l) => String(l.msg).startsWith('background checkpoints stopped'))
  expect(stopped.map((l) => l.file).sort()).toEqual([moved.path, garbage.path].sort())
  expect(stopped.find((l) => l.file === garbage.path)?.msg).toMatch(/could not open the mirror: file is not a database/)
  renameSync(`${moved.path}.moved`, moved.path)
  for (const p of parts) renameSync(`${p}.moved`, p)
  others = [healthy, moved, garbage]
})
