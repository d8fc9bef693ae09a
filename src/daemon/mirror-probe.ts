// Is the mirror usable: open, writable, every migration applied? Shared by /readyz and `doctor`.
// Writability is a real write lock taken and released (BEGIN IMMEDIATE; ROLLBACK) with no busy
// wait, so a probe never blocks the event loop: a lock held by another writer means the file is
// writable, just busy, and counts as ready.
import { MIGRATIONS } from '../store/migrations/index.js'
import type { Sqlite } from '../store/mirror-database.js'

export type ProbeResult = { ok: true; migrations: number } | { ok: false; reason: string }

export function probeMirror(sqlite: Sqlite, busyTimeoutMs = 5000): ProbeResult {
  if (!sqlite.open) return { ok: false, reason: 'the mirror is closed' }
  if (sqlite.readonly) return { ok: false, reason: 'the mirror is open read-only' }
  let applied: number
  try {
    applied = sqlite.prepare(`SELECT count(*) FROM kysely_migration`).pluck().get() as number
  } catch (err) {
    return { ok: false, reason: `no migrations recorded: ${(err as Error).message}` }
  }
  const expected = Object.keys(MIGRATIONS).length
  if (applied < expected) return { ok: false, reason: `${applied} of ${expected} migrations applied` }
  // A transaction of ours is open (between two synchronous statements this never happens, but
  // the probe must not end someone else's): the connection is evidently writable.
  if (sqlite.inTransaction) return { ok: true, migrations: applied }
  try {
    sqlite.pragma('busy_timeout = 0')
    sqlite.exec('BEGIN IMMEDIATE')
    sqlite.exec('ROLLBACK')
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') return { ok: false, reason: `the mirror is not writable: ${(err as Error).message}` }
  } finally {
    sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`)
  }
  return { ok: true, migrations: applied }
}
