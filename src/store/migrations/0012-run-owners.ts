// Which process owns each run. A command that starts beside a live daemon (a cron `reconcile` on
// the same volume) must not mark the daemon's running runs interrupted: only runs of a process
// that is gone may be. Each process records itself once (pid, host, pid namespace, start) and
// refreshes one heartbeat; sync_runs names its owner.
import type { MigrationStatements } from './types.js'

export const runOwners: MigrationStatements = [
  `CREATE TABLE run_owners (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid_namespace TEXT NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
  ) STRICT`,
  `ALTER TABLE sync_runs ADD COLUMN owner_id INTEGER`,
  `CREATE INDEX sync_runs_running ON sync_runs (owner_id) WHERE outcome = 'running'`,
]
