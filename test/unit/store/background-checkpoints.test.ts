// Checkpoints on a worker thread, against a real mirror file: committed rows reach the database file
// while the writer never checkpoints itself, the writer's own setting comes back when the worker
// stops or cannot start, and the data survives it all.
import { copyFileSync, existsSync, renameSync, statSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { afterEach, expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { startBackgroundCheckpoints, type BackgroundCheckpoints } from '../../../src/store/background-checkpoints.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
let checkpoints: BackgroundCheckpoints | undefined
afterEach(async () => {
  await checkpoints?.stop()
  await mirror?.dispose()
  checkpoints = mirror = undefined
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
