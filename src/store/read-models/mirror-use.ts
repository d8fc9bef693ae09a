// Whether anything was ever synced into a mirror: what the commands that read or extend a mirror
// (`status`, `query`, `reconcile`, `trigger`) check first, so that one pointed at the wrong file (a
// container on the wrong volume) fails instead of creating an empty mirror and succeeding quietly.
import type { Sqlite } from '../sqlite/mirror-database.js'

export interface MirrorUse {
  /**
   * A sweep or a reference read once succeeded (a `success` row of kind `sweep` or `reference` in
   * `sync_runs`), or a sweep stored a page (a cursor in `sync_state`: retention may have removed the
   * run, never the cursor), or a webhook delivery was applied (a `webhook_inbox` row with
   * `processed_at`: a mirror fed only by webhooks, with `schedules.sweep` and `schedules.reference`
   * "off", is synced too). Reconciliations and triggers do not count: on an empty mirror they succeed
   * with nothing to look at.
   */
  synced: boolean
  /** Runs in `sync_runs` still `running` (a first backfill under way shows here). */
  running: number
}

export function mirrorUse(sqlite: Sqlite): MirrorUse {
  const tables = new Set(
    sqlite
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('sync_runs', 'sync_state', 'webhook_inbox')`)
      .pluck()
      .all() as string[],
  )
  if (!tables.has('sync_runs') || !tables.has('sync_state')) return { synced: false, running: 0 }
  const succeeded =
    sqlite.prepare(`SELECT 1 FROM sync_runs WHERE outcome = 'success' AND kind IN ('sweep', 'reference') LIMIT 1`).get() !== undefined ||
    sqlite.prepare(`SELECT 1 FROM sync_state WHERE cursor IS NOT NULL LIMIT 1`).get() !== undefined ||
    (tables.has('webhook_inbox') &&
      sqlite.prepare(`SELECT 1 FROM webhook_inbox WHERE processed_at IS NOT NULL LIMIT 1`).get() !== undefined)
  const running = sqlite.prepare(`SELECT count(*) FROM sync_runs WHERE outcome = 'running'`).pluck().get() as number
  return { synced: succeeded, running }
}
