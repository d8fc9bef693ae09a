// Where a run resumes: the stream's stored cursor, parsed with the schema of its kind. A cursor
// that does not parse (a corrupted row, an older shape, an edit by hand) must not fail the run,
// and with it every run after it: the stream restarts from its safe point instead, the caller's
// `restart`, which for every stream here is "no cursor" (see each caller for why that is safe). The
// problem is logged once, kept in sync_state.last_error (so `status` shows it) and returned for the
// run's details. The bad cursor is cleared at once, so a run stopped before its first page does not
// report it again; the pages the run commits store good cursors.
import type { z } from 'zod'
import { isoNow } from '../model/timestamps.js'
import type { SyncContext } from './sync-context.js'

export interface ResumePoint<T> {
  cursor: T | undefined
  /** What was wrong with the stored cursor, when it was set aside. */
  cursorReset?: string
}

export function resumeCursor<T>(
  ctx: SyncContext,
  stream: string,
  runId: () => number,
  schema: z.ZodType<T>,
  restart: string,
): ResumePoint<T> {
  const stored = ctx.state.readCursor(stream, schema)
  if (stored.ok) return { cursor: stored.cursor }
  const message = `stored cursor of ${stream} could not be read (${stored.problem}); ${stream} restarts from ${restart}`
  ctx.logger.warn({ stream, problem: stored.problem, restart }, 'stored cursor could not be read; the stream restarts from its safe point')
  const now = isoNow(ctx.now())
  ctx.mirror.sqlite.transaction(() => {
    ctx.state.clearCursor(stream, now)
    ctx.state.recordError(stream, runId(), message, now)
  })()
  return { cursor: undefined, cursorReset: stored.problem }
}
