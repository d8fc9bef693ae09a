// Giving freed pages back to the file system. Deleted rows leave free pages inside the file; SQLite
// reuses them for new rows, so without this the file stays at its largest size for good. With
// auto_vacuum = INCREMENTAL (set on every new mirror by openMirror) `PRAGMA incremental_vacuum(N)`
// moves up to N free pages to the end of the file and truncates them, in the writer's transaction:
// done in small steps, the event loop (and webhook acks) waits a few milliseconds at a time.
import { statSync } from 'node:fs'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Sqlite } from './mirror-database.js'

/** SQLite's value of `PRAGMA auto_vacuum` for INCREMENTAL. */
const INCREMENTAL = 2
/** Pages per incremental_vacuum statement (1 MiB at 4 KiB pages; about 5-20 ms here). */
const STEP_PAGES = 256

export function incrementalVacuumEnabled(sqlite: Sqlite): boolean {
  return sqlite.pragma('auto_vacuum', { simple: true }) === INCREMENTAL
}

export interface FreeOptions {
  signal?: AbortSignal
  pause?: () => Promise<void>
}

/**
 * Gives back up to `maxPages` free pages, in steps with a pause between them. Returns the pages
 * given back; 0 on a mirror without incremental auto-vacuum (its free pages wait for new rows).
 */
export async function freeUnusedPages(sqlite: Sqlite, maxPages: number, options: FreeOptions = {}): Promise<number> {
  if (maxPages <= 0 || !incrementalVacuumEnabled(sqlite)) return 0
  const pause = options.pause ?? (() => nextTurn())
  let freed = 0
  while (freed < maxPages && options.signal?.aborted !== true) {
    const free = sqlite.pragma('freelist_count', { simple: true }) as number
    if (free === 0) break
    const step = Math.min(STEP_PAGES, maxPages - freed, free)
    sqlite.exec(`PRAGMA incremental_vacuum(${step})`)
    freed += step
    await pause()
  }
  return freed
}

export interface Conversion {
  durationMs: number
  /** Size of the file and its -wal before and after, in bytes. */
  bytesBefore: number
  bytesAfter: number
}

/**
 * Switches a mirror created before incremental auto-vacuum to it: one full VACUUM, which rewrites
 * the whole file and holds the writer throughout. It needs about twice the mirror's size in free
 * disk: the rewritten pages go through the -wal (which grows to the mirror's size) and SQLite builds
 * the copy in a temporary file first. Returns undefined when the mirror already has it. Run it where
 * nothing else writes; the daemon does it at start only for a small mirror (retention-job.ts).
 */
export function enableIncrementalVacuum(sqlite: Sqlite, file: string, now: () => number = () => performance.now()): Conversion | undefined {
  if (incrementalVacuumEnabled(sqlite)) return undefined
  const bytesBefore = fileBytes(file)
  const started = now()
  sqlite.pragma('auto_vacuum = INCREMENTAL')
  sqlite.exec('VACUUM')
  // VACUUM wrote the whole mirror through the log; empty it rather than keep a log that large.
  sqlite.pragma('wal_checkpoint(TRUNCATE)')
  return { durationMs: Math.round(now() - started), bytesBefore, bytesAfter: fileBytes(file) }
}

/** The mirror's file plus its -wal, in bytes. */
export function fileBytes(file: string): number {
  const size = (f: string) => {
    try {
      return statSync(f).size
    } catch {
      return 0
    }
  }
  return size(file) + size(`${file}-wal`)
}
