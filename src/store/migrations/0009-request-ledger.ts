// Start times of recent upstream requests (found by the soak): the rate limit is a sliding
// 60 s window per key (spec, Limits), and a process that starts within a minute of another one on
// the same mirror (a restart after a crash, `fsm-sync sync` from cron) must count what that one
// already spent. Pruned to the last window as it grows; never holds anything but times.
import type { MigrationStatements } from './types.js'

export const requestLedger: MigrationStatements = [
  `CREATE TABLE request_starts (at_ms INTEGER NOT NULL) STRICT`,
  `CREATE INDEX request_starts_at ON request_starts (at_ms)`,
]
