// A write committed with synchronous=FULL for a caller that cannot sync the -wal file itself (the
// group commit's fallback, src/webhooks/group-commit.ts); the connection's level is restored after.
import type { Sqlite } from './mirror-database.js'

/** Runs `write` (one transaction) under synchronous=FULL when `full`, else at the connection's level. */
export function withFullSync(sqlite: Sqlite): <T>(full: boolean, write: () => T) => T {
  // PRAGMA synchronous with `simple` is its level as a number.
  const previous = sqlite.pragma('synchronous', { simple: true }) as number
  const toFull = sqlite.prepare('PRAGMA synchronous = FULL')
  const restore = sqlite.prepare(`PRAGMA synchronous = ${previous}`)
  return (full, write) => {
    if (!full) return write()
    toFull.run()
    try {
      return write()
    } finally {
      restore.run()
    }
  }
}
