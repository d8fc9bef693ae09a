// Is the mirror usable: open, every migration applied, and able to take a write that reaches the
// disk? Shared by /readyz and `doctor`. Taking the write lock and rolling back (what this did
// before) said "ready" with the disk full while every delivery was answered 503, so the probe now:
// - rewrites its one row (mirror_probe) and commits, with no busy wait: a lock held by another
//   writer means the file is writable, just busy, and counts as ready;
// - checks there is room to grow: pages left under max_page_count plus free pages, and free space
//   on the disk, each at least `minRoomBytes` (the caller's `webhooks.maxBodyBytes`: one full-size
//   delivery). A rewrite in place needs no new page, so on a full mirror it succeeds while every
//   insert fails;
// - syncs the -wal file (fdatasync on libuv's pool, not the event loop), as the inbox does for acks.
// It costs one small commit and one sync per call; calls made while one runs share its answer.
import fs from 'node:fs'
import path from 'node:path'
import { MIGRATIONS } from '../store/migrations/index.js'
import { appliedMigrationCount, pageRoom, writeProbeRow } from '../store/sqlite/mirror-health.js'
import { fileFault } from '../store/sqlite/file-faults.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { mainFileOf, syncWalFile } from '../store/sqlite/wal-file.js'

export type ProbeResult = { ok: true; migrations: number } | { ok: false; reason: string }

/** What a mirror's open proved before any probe: every migration applied (mirror-database.ts runs them). */
export const MIRROR_OPENED: ProbeResult = { ok: true, migrations: Object.keys(MIGRATIONS).length }

const inFlight = new WeakMap<Sqlite, Promise<ProbeResult>>()

/** `minRoomBytes`: room the mirror and its disk must have left to be ready (one delivery at the intake's cap). */
export function probeMirror(sqlite: Sqlite, minRoomBytes: number): Promise<ProbeResult> {
  const running = inFlight.get(sqlite)
  if (running !== undefined) return running
  const probe = run(sqlite, minRoomBytes).finally(() => inFlight.delete(sqlite))
  inFlight.set(sqlite, probe)
  return probe
}

async function run(sqlite: Sqlite, minRoomBytes: number): Promise<ProbeResult> {
  const written = write(sqlite)
  if (!written.ok) return written
  const room = await roomLeft(sqlite, minRoomBytes)
  if (room !== undefined) return { ok: false, reason: room }
  try {
    await syncWalFile(sqlite)
  } catch (err) {
    return { ok: false, reason: `syncing the mirror's log to disk failed (${(err as Error).message}): check the disk` }
  }
  return written
}

/** The synchronous part: migrations and the row's rewrite. */
function write(sqlite: Sqlite): ProbeResult {
  if (!sqlite.open) return { ok: false, reason: 'the mirror is closed' }
  if (sqlite.readonly) return { ok: false, reason: 'the mirror is open read-only' }
  let applied: number
  try {
    applied = appliedMigrationCount(sqlite)
  } catch (err) {
    return { ok: false, reason: describe(err, 'no migrations recorded') }
  }
  const expected = Object.keys(MIGRATIONS).length
  if (applied < expected) return { ok: false, reason: `${applied} of ${expected} migrations applied` }
  // A transaction of ours is open (between two synchronous statements this never happens, but the
  // probe must not commit someone else's): the connection is evidently writable.
  if (sqlite.inTransaction) return { ok: true, migrations: applied }
  try {
    // The system's time, not the Clock: the write only proves the mirror takes writes. Without waiting: a lock another writer holds answers SQLITE_BUSY at once.
    writeProbeRow(sqlite, new Date().toISOString())
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') return { ok: false, reason: describe(err, 'the mirror is not writable') }
  }
  return { ok: true, migrations: applied }
}

async function roomLeft(sqlite: Sqlite, minRoomBytes: number): Promise<string | undefined> {
  if (!sqlite.open) return 'the mirror is closed'
  const { pageSize, maxPageCount, pageCount, freelistCount } = pageRoom(sqlite)
  const pages = maxPageCount - pageCount + freelistCount
  if (pages * pageSize < minRoomBytes) {
    return `the mirror is full: ${pages} free pages of ${pageSize} bytes left under its max_page_count (${maxPageCount}); deliveries are answered 503 until it has room`
  }
  const file = mainFileOf(sqlite)
  if (file === undefined) return undefined
  const disk = await fs.promises.statfs(path.dirname(file))
  const free = disk.bavail * disk.bsize
  if (free < minRoomBytes)
    return `the disk holding the mirror is full: ${free} bytes free in ${path.dirname(file)}; free space on it (deliveries are answered 503 until then)`
  return undefined
}

function describe(err: unknown, fallback: string): string {
  const fault = fileFault(err)
  return fault === undefined ? `${fallback}: ${(err as Error).message}` : `${fault.what}: ${fault.fix}`
}
