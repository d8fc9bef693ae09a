// Cursors, last success and last error per stream (sync_state), and one row per sweep,
// reconciliation or trigger (sync_runs). Cursor writes are synchronous so that the engine can put
// them in the same transaction as the page they cover (docs/guarantees.md, Killed at any moment).
import { z } from 'zod'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { parseStoredCursor, type StoredCursor } from './stored-cursor.js'

import type { RunKind, RunOutcome, SyncStateTable } from '../sqlite/mirror-schema.js'

export type { RunKind, RunOutcome } from '../sqlite/mirror-schema.js'

/** A stream's row; its cursor is read only through `readCursor`, with the schema of its kind. */
export interface StreamState {
  stream: string
  lastSuccessAt: string | null
  lastError: string | null
  lastErrorAt: string | null
  lastRunId: number | null
}

export interface RunSummary {
  outcome: Exclude<RunOutcome, 'running'>
  rows: number
  requests: number
  error?: string
  details?: unknown
}

/**
 * What a running sweep knows of its progress, kept in its sync_runs row's `details` (under
 * `progress`) page by page, so that `status` in another process can show it. The run's own details
 * replace it when the run ends.
 */
export const RunProgressSchema = z.object({
  /** Rows read from the upstream so far, and rows they changed in the mirror. */
  rowsRead: z.number(),
  rowsChanged: z.number(),
  requests: z.number(),
  /** Rows still to read (the latest answer's meta.total), null when not known (yet). */
  rowsRemaining: z.number().nullable(),
  /** Those rows in requests at the run's page size. */
  requestsRemaining: z.number().nullable(),
  /** A walk from the start (no stored cursor, or a full walk). */
  backfill: z.boolean(),
  /** The budget the run's requests start at, requests per minute, when the row was written. */
  budgetPerMinute: z.number().nullable(),
  /** Canonical UTC text of the write. */
  at: z.string(),
})
export type RunProgress = z.infer<typeof RunProgressSchema>

/** The progress a running run stored in its details, or undefined (none yet, or not this shape). */
export function readRunProgress(details: string | null): RunProgress | undefined {
  if (details === null) return undefined
  try {
    const parsed = RunProgressSchema.safeParse((JSON.parse(details) as { progress?: unknown } | null)?.progress)
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

export class SyncStateStore {
  private readonly getStmt
  private readonly allStmt
  private readonly setCursorStmt
  private readonly successStmt
  private readonly errorStmt
  private readonly startRunStmt
  private readonly finishRunStmt
  private readonly abandonStmt
  private readonly progressStmt
  private readonly hasRunStmt

  private readonly runningOwnersStmt
  private readonly ownerId: number | null

  /** `ownerId`: this process in run_owners; its runs carry it so that no other process abandons them while it lives. */
  constructor(
    private readonly sqlite: Sqlite,
    options: { ownerId?: number } = {},
  ) {
    this.ownerId = options.ownerId ?? null
    // Raw statements, prepared once: a cursor is written with every page a sweep commits.
    this.getStmt = sqlite.prepare('SELECT * FROM sync_state WHERE stream = ?')
    this.allStmt = sqlite.prepare('SELECT * FROM sync_state ORDER BY stream')
    const upsert = (set: string) =>
      sqlite.prepare(
        `INSERT INTO sync_state (stream, cursor, last_success_at, last_error, last_error_at, last_run_id, updated_at)
         VALUES (@stream, @cursor, @successAt, @error, @errorAt, @runId, @now)
         ON CONFLICT(stream) DO UPDATE SET ${set}, updated_at = @now`,
      )
    this.setCursorStmt = upsert('cursor = @cursor')
    this.successStmt = upsert('last_success_at = @successAt, last_run_id = @runId')
    this.errorStmt = upsert('last_error = @error, last_error_at = @errorAt, last_run_id = @runId')
    this.startRunStmt = sqlite.prepare(
      `INSERT INTO sync_runs (kind, stream, started_at, outcome, owner_id) VALUES (?, ?, ?, 'running', ?) RETURNING id`,
    )
    this.finishRunStmt = sqlite.prepare(
      `UPDATE sync_runs SET ended_at = @now, outcome = @outcome, rows = @rows, requests = @requests, error = @error, details = @details WHERE id = @id`,
    )
    // Prepared once: written with every page a sweep commits, in the page's transaction.
    this.progressStmt = sqlite.prepare(`UPDATE sync_runs SET details = ? WHERE id = ? AND outcome = 'running'`)
    this.hasRunStmt = sqlite.prepare('SELECT 1 FROM sync_runs WHERE id = ? AND stream = ? AND started_at = ?').pluck()
    this.abandonStmt = sqlite.prepare(
      `UPDATE sync_runs SET outcome = 'interrupted', ended_at = ? WHERE outcome = 'running' AND owner_id IS ?`,
    )
    this.runningOwnersStmt = sqlite.prepare(`SELECT DISTINCT owner_id FROM sync_runs WHERE outcome = 'running'`).pluck()
  }

  get(stream: string): StreamState | undefined {
    const row = this.getStmt.get(stream) as SyncStateTable | undefined
    return row === undefined ? undefined : toState(row)
  }

  all(): StreamState[] {
    return (this.allStmt.all() as SyncStateTable[]).map(toState)
  }

  /** The stored cursor of `stream` parsed with `schema`; a row that does not parse is reported, not thrown. */
  readCursor<T>(stream: string, schema: z.ZodType<T>): StoredCursor<T> {
    const row = this.getStmt.get(stream) as SyncStateTable | undefined
    return parseStoredCursor(row?.cursor ?? null, schema)
  }

  setCursor(stream: string, cursor: unknown, now: string): void {
    this.setCursorStmt.run({ ...empty(stream, now), cursor: cursor === undefined ? null : JSON.stringify(cursor) })
  }

  clearCursor(stream: string, now: string): void {
    this.setCursorStmt.run({ ...empty(stream, now), cursor: null })
  }

  recordSuccess(stream: string, runId: number, now: string): void {
    this.successStmt.run({ ...empty(stream, now), successAt: now, runId })
  }

  recordError(stream: string, runId: number, message: string, now: string): void {
    this.errorStmt.run({ ...empty(stream, now), error: message, errorAt: now, runId })
  }

  startRun(kind: RunKind, stream: string, now: string): number {
    return (this.startRunStmt.get(kind, stream, now, this.ownerId) as { id: number }).id
  }

  /** Whether the run `startRun` gave `id` has its row (one written in a transaction that rolled back has none). */
  hasRun(id: number, stream: string, startedAt: string): boolean {
    return this.hasRunStmt.get(id, stream, startedAt) !== undefined
  }

  finishRun(id: number, summary: RunSummary, now: string): void {
    this.finishRunStmt.run({
      id,
      now,
      outcome: summary.outcome,
      rows: summary.rows,
      requests: summary.requests,
      error: summary.error ?? null,
      details: summary.details === undefined ? null : JSON.stringify(summary.details),
    })
  }

  /** Stores what a running run knows of its progress (see RunProgress); a run that has ended keeps its details. */
  setRunProgress(id: number, progress: RunProgress): void {
    this.progressStmt.run(JSON.stringify({ progress }), id)
  }

  /**
   * Runs left `running` by a process that is gone (killed, or a container that stopped): marked
   * `interrupted`. Runs of a live process (a daemon beside this cron command) are left alone;
   * `isGone` decides, given a run's owner id (null: a run from before owners were recorded).
   */
  abandonRunning(now: string, isGone: (ownerId: number | null) => boolean): number {
    return this.sqlite
      .transaction(() => {
        let n = 0
        for (const owner of this.runningOwnersStmt.all() as (number | null)[])
          if (isGone(owner)) n += this.abandonStmt.run(now, owner).changes
        return n
      })
      .immediate()
  }
}

function empty(stream: string, now: string) {
  return { stream, now, cursor: null, successAt: null, error: null, errorAt: null, runId: null }
}

function toState(row: SyncStateTable): StreamState {
  return {
    stream: row.stream,
    lastSuccessAt: row.last_success_at,
    lastError: row.last_error,
    lastErrorAt: row.last_error_at,
    lastRunId: row.last_run_id,
  }
}
