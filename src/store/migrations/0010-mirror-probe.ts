// The one row the readiness probe rewrites (and syncs) on every /readyz: a mirror is ready only if a
// real write reaches the disk. A lock taken and rolled back said "ready" with the disk full.
import type { MigrationStatements } from './types.js'

export const mirrorProbe: MigrationStatements = [
  `CREATE TABLE mirror_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    written_at TEXT NOT NULL
  ) STRICT`,
]
