// Reading what happened, for reports: finished runs from sync_runs and the position of change_log.
// The writes of both belong to the sync (sync-state.ts) and the record writer; nothing here writes.
// Not on a hot path (a status report, the demo's activity line every few seconds): typed queries.
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { RunKind, RunOutcome } from '../repositories/sync-state.js'
import { firstRow, mirrorQuery, rows, type RowOf } from '../sqlite/typed-query.js'

/** A finished run, as reports show it. */
export interface FinishedRun {
  id: number
  stream: string
  kind: RunKind
  outcome: Exclude<RunOutcome, 'running'>
  rows: number
  requests: number
  error: string | null
  startedAt: string
  endedAt: string
}

/** A run not ended yet. */
export interface RunningRun {
  id: number
  stream: string
  kind: RunKind
  startedAt: string
  /** JSON: while a sweep runs, its progress (sync-state.ts, RunProgress). */
  details: string | null
  ownerId: number | null
}

export class RunHistory {
  readonly #sqlite: Sqlite

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
  }

  /** The highest run id (0 before the first run). */
  lastRunId(): number {
    return (
      firstRow(
        this.#sqlite,
        mirrorQuery.selectFrom('sync_runs').select((eb) => eb.fn.max<number | null>('id').as('id')),
      )?.id ?? 0
    )
  }

  /** The highest change_log seq (0 before the first change). */
  lastChangeSeq(): number {
    return (
      firstRow(
        this.#sqlite,
        mirrorQuery.selectFrom('change_log').select((eb) => eb.fn.max<number | null>('seq').as('seq')),
      )?.seq ?? 0
    )
  }

  /** Runs with an id above `afterId` that have ended, in id order. */
  finishedAfter(afterId: number): FinishedRun[] {
    return rows(this.#sqlite, finished().where('id', '>', afterId)).map(toFinished)
  }

  /** Runs started at or after `startedAt` (an ISO instant) that have ended, in id order. */
  finishedSince(startedAt: string): FinishedRun[] {
    return rows(this.#sqlite, finished().where('started_at', '>=', startedAt)).map(toFinished)
  }

  /** The lowest id above `afterId` of a run not ended yet, or undefined when none is running. */
  firstRunningAfter(afterId: number): number | undefined {
    const row = firstRow(
      this.#sqlite,
      mirrorQuery
        .selectFrom('sync_runs')
        .select((eb) => eb.fn.min<number | null>('id').as('id'))
        .where('id', '>', afterId)
        .where('ended_at', 'is', null),
    )
    return row?.id ?? undefined
  }

  /**
   * Runs not ended yet, in id order, with their details (a running sweep's progress) and owner.
   * `owners: false` for a mirror older than run owners (read-only, not migrated): no owner column.
   */
  running(options: { owners: boolean } = { owners: true }): RunningRun[] {
    // Plain statements, as the status report's other reads: `status` loads no query builder.
    const owner = options.owners ? 'owner_id' : 'NULL AS owner_id'
    // The columns RunningRow names, as sync_runs declares them.
    const found = this.#sqlite
      .prepare(`SELECT id, stream, kind, started_at, details, ${owner} FROM sync_runs WHERE ended_at IS NULL ORDER BY id`)
      .all() as RunningRow[]
    return found.map((r) => ({
      id: r.id,
      stream: r.stream,
      kind: r.kind,
      startedAt: r.started_at,
      details: r.details,
      ownerId: r.owner_id,
    }))
  }

  /** Requests recorded by runs that ended (or, still going, started) at or after `since`. */
  requestsSince(since: string): number {
    // sum() of an integer column: an integer, or NULL over no rows.
    const sum = this.#sqlite.prepare(`SELECT sum(requests) FROM sync_runs WHERE coalesce(ended_at, started_at) >= ?`).pluck().get(since) as
      number | null
    return sum ?? 0
  }
}

interface RunningRow {
  id: number
  stream: string
  kind: RunKind
  started_at: string
  details: string | null
  owner_id: number | null
}

const finished = () =>
  mirrorQuery
    .selectFrom('sync_runs')
    .select(['id', 'stream', 'kind', 'outcome', 'rows', 'requests', 'error', 'started_at', 'ended_at'])
    .where('ended_at', 'is not', null)
    .orderBy('id')

function toFinished(r: RowOf<ReturnType<typeof finished>>): FinishedRun {
  return {
    id: r.id,
    stream: r.stream,
    kind: r.kind,
    // Only a run that has not ended is `running`, and these have.
    outcome: r.outcome === 'running' ? 'interrupted' : r.outcome,
    rows: r.rows,
    requests: r.requests,
    error: r.error,
    startedAt: r.started_at,
    endedAt: r.ended_at ?? r.started_at,
  }
}
