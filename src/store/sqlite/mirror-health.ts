// What the readiness probe (src/daemon/mirror-probe.ts), `doctor` and the daemon's checkpoint job
// ask of the mirror's file: migrations recorded, a real write, room left, page checks, a passive
// checkpoint. The decisions (ready or not, what to tell the operator) stay with the callers.
import type { Sqlite } from './mirror-database.js'
import { MIGRATION_TABLE } from './migration-runner.js'
import { firstRow, mirrorQuery } from './typed-query.js'

/** Migrations recorded as applied; throws when the mirror has no record of any. */
export function appliedMigrationCount(sqlite: Sqlite): number {
  return (
    firstRow(
      sqlite,
      mirrorQuery.selectFrom(MIGRATION_TABLE).select((eb) => eb.fn.countAll<number>().as('n')),
    )?.n ?? 0
  )
}

/**
 * Rewrites the probe's one row (mirror_probe) and commits, without waiting for a lock another
 * writer holds: that throws SQLITE_BUSY at once. The connection's busy timeout is put back after.
 */
export function writeProbeRow(sqlite: Sqlite, nowIso: string): void {
  const busyTimeoutMs = sqlite.pragma('busy_timeout', { simple: true }) as number
  try {
    sqlite.pragma('busy_timeout = 0')
    // Raw: the upsert needs nothing typed, and runs on every /readyz.
    sqlite
      .prepare(`INSERT INTO mirror_probe (id, written_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at`)
      .run(nowIso)
  } finally {
    if (sqlite.open) sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`)
  }
}

/** The file's pages: their size, the most it may have, how many it has, how many of those are free. */
export interface PageRoom {
  pageSize: number
  maxPageCount: number
  pageCount: number
  freelistCount: number
}

export function pageRoom(sqlite: Sqlite): PageRoom {
  // PRAGMA with `simple` returns the one value of its one row: a number for each of these.
  const num = (pragma: string) => sqlite.pragma(pragma, { simple: true }) as number
  return {
    pageSize: num('page_size'),
    maxPageCount: num('max_page_count'),
    pageCount: num('page_count'),
    freelistCount: num('freelist_count'),
  }
}

/**
 * PRAGMA quick_check: every page of every table and index read and checked, up to `maxProblems`
 * problems reported ([] when the mirror is intact). Throws what SQLite throws on a file it cannot read.
 */
export function quickCheck(sqlite: Sqlite, maxProblems: number): string[] {
  // quick_check returns one text row per problem, or the one row 'ok'.
  const found = sqlite
    .prepare(`PRAGMA quick_check(${Math.max(1, Math.trunc(maxProblems))})`)
    .pluck()
    .all() as string[]
  return found.filter((p) => p !== 'ok')
}

/** A passive checkpoint: copies what it can of the -wal into the file without waiting for readers. */
export function checkpointPassive(sqlite: Sqlite): void {
  sqlite.pragma('wal_checkpoint(PASSIVE)')
}
