// Retention in the daemon: the scheduled pass (`schedules.retention`), and the one-time switch of
// an older mirror to incremental auto-vacuum at start.
//
// Why the switch runs at daemon start: it is a full VACUUM, which needs the only writer. Later, a
// separate command would meet the running daemon's writer (and make it wait, with webhook acks
// behind it); at start nothing listens yet, it happens once per mirror, and it is logged with its
// duration. A mirror that cannot be switched (no disk space for the copy) still works: retention
// deletes as usual and the file stops growing, it just does not shrink.
import type { Logger } from '../log/logger.js'
import { enableIncrementalVacuum } from '../store/incremental-vacuum.js'
import type { Sqlite } from '../store/mirror-database.js'
import { runRetention, type RetentionSettings } from '../store/retention.js'
import type { DaemonMetrics } from './daemon-metrics.js'
import type { JobDefinition } from './scheduler.js'

export function enableIncrementalVacuumAtStart(sqlite: Sqlite, file: string, logger: Logger): void {
  logger.debug('checking that the mirror gives freed pages back (incremental auto-vacuum)')
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
      { err },
      'cannot switch the mirror to incremental auto-vacuum (a VACUUM needs free disk space as large as the mirror): retention still deletes old rows, but the file will not shrink; free some space and restart the daemon to try again',
    )
  }
}

export interface RetentionJobDeps {
  sqlite: Sqlite
  settings: RetentionSettings
  cron: string
  logger: Logger
  metrics: DaemonMetrics
  now?: () => number
}

export function retentionJob({ sqlite, settings, cron, logger, metrics, now = Date.now }: RetentionJobDeps): JobDefinition {
  const log = logger.child({ job: 'retention' })
  return {
    name: 'retention',
    cron,
    run: async (signal) => {
      const started = performance.now()
      const r = await runRetention(sqlite, now(), settings, { signal })
      metrics.retentionRemoved(r.removed)
      log.info({ removed: r.removed, freedPages: r.freedPages, aborted: r.aborted, durationMs: Math.round(performance.now() - started) }, 'retention pass done')
    },
  }
}
