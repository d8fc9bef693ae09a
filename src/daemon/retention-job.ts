// Retention in the daemon: the scheduled pass (`schedules.retention`), and the one-time switch of
// an older mirror to incremental auto-vacuum at start.
//
// The switch is a full VACUUM: synchronous, it holds the event loop and the only writer until done,
// before the daemon listens. That is fine for a small mirror (seconds), not for a large one: for
// minutes deliveries would be refused (the sender never re-sends), /healthz would not answer, a
// liveness probe would kill the process, the VACUUM would roll back and the next start would try
// again. So a mirror above START_VACUUM_MAX_BYTES is left as it is, with a warning at every start
// saying how to switch it with the daemon stopped. It still works: retention deletes as usual and
// SQLite reuses the freed pages, so the file stops growing; it just does not shrink.
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { enableIncrementalVacuum, fileBytes, incrementalVacuumEnabled } from '../store/sqlite/incremental-vacuum.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { runRetention, type RetentionSettings } from '../store/repositories/retention.js'
import type { DaemonMetrics } from './daemon-metrics.js'
import type { JobDefinition } from './scheduler.js'

/**
 * Largest mirror (file plus -wal) switched at daemon start: 256 MiB. A VACUUM rewrites it at disk
 * speed, a few seconds on an ordinary SSD or cloud volume, well inside the 30 s a liveness probe
 * usually allows, and needs at most about 512 MiB of free disk.
 */
export const START_VACUUM_MAX_BYTES = 256 * 1024 * 1024

const MIB = 1024 * 1024

export function enableIncrementalVacuumAtStart(sqlite: Sqlite, file: string, logger: Logger, maxBytes = START_VACUUM_MAX_BYTES): void {
  logger.debug('checking that the mirror gives freed pages back (incremental auto-vacuum)')
  if (incrementalVacuumEnabled(sqlite)) return
  const bytes = fileBytes(file)
  if (bytes > maxBytes) {
    logger.warn(
      { file, bytes, maxBytes, diskNeededBytes: 2 * bytes },
      `the mirror (${Math.ceil(bytes / MIB)} MiB) was created before incremental auto-vacuum and is too large to switch at start (over ${Math.round(maxBytes / MIB)} MiB): retention still deletes old rows and their space is reused, but the file will not shrink. To switch it, stop the daemon and run: sqlite3 '${file}' "PRAGMA auto_vacuum=INCREMENTAL; VACUUM" (it needs about ${Math.ceil((2 * bytes) / MIB)} MiB free on that disk, twice the mirror), then start the daemon again`,
    )
    return
  }
  try {
    const done = enableIncrementalVacuum(sqlite, file)
    if (done !== undefined) {
      logger.info(
        { durationMs: done.durationMs, bytesBefore: done.bytesBefore, bytesAfter: done.bytesAfter },
        'the mirror was switched to incremental auto-vacuum (one VACUUM, once per mirror): retention now shrinks the file',
      )
    }
  } catch (err) {
    logger.warn(
      { err, diskNeededBytes: 2 * bytes },
      `cannot switch the mirror to incremental auto-vacuum (a VACUUM needs about twice the mirror's size in free disk, ${Math.ceil((2 * bytes) / MIB)} MiB): retention still deletes old rows and their space is reused, but the file will not shrink; free some space and restart the daemon to try again`,
    )
  }
}

export interface RetentionJobDeps {
  sqlite: Sqlite
  settings: RetentionSettings
  cron: string
  logger: Logger
  metrics: DaemonMetrics
  /** The app's clock: the age of a row is measured from its now. */
  clock: Clock
}

export function retentionJob({ sqlite, settings, cron, logger, metrics, clock }: RetentionJobDeps): JobDefinition {
  const log = logger.child({ job: 'retention' })
  return {
    name: 'retention',
    cron,
    run: async (signal) => {
      // A measurement of the pass's own work for the log line, not a time the job acts on.
      const started = performance.now()
      const r = await runRetention(sqlite, clock.now(), settings, { signal })
      metrics.retentionRemoved(r.removed)
      log.info(
        { removed: r.removed, freedPages: r.freedPages, aborted: r.aborted, durationMs: Math.round(performance.now() - started) },
        'retention pass done',
      )
    },
  }
}
