// The processes that own runs (run_owners): one row per live process, refreshed by one UPDATE per
// heartbeat, never one per run or per row. A few statements a minute: typed queries.
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { ProcessIdentity, RunOwner } from './owner-liveness.js'
import type { Selectable } from 'kysely'
import type { RunOwnersTable } from '../sqlite/mirror-schema.js'
import { firstRow, mirrorQuery, run } from '../sqlite/typed-query.js'

export class RunOwnerStore {
  readonly #sqlite: Sqlite

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
  }

  register(self: ProcessIdentity, startedAt: string, now: string): number {
    const row = firstRow(
      this.#sqlite,
      mirrorQuery
        .insertInto('run_owners')
        .values({ pid: self.pid, host: self.host, pid_namespace: self.pidNamespace, started_at: startedAt, heartbeat_at: now })
        .returning('id'),
    )
    if (row === undefined) throw new Error('registering this process in run_owners returned no id')
    return row.id
  }

  beat(owner: Omit<RunOwner, 'heartbeatAt'>, now: string): void {
    // An upsert: an owner taken for gone during a long stall (and removed) comes back as it was.
    run(
      this.#sqlite,
      mirrorQuery
        .insertInto('run_owners')
        .values({
          id: owner.id,
          pid: owner.pid,
          host: owner.host,
          pid_namespace: owner.pidNamespace,
          started_at: owner.startedAt,
          heartbeat_at: now,
        })
        .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ heartbeat_at: eb.ref('excluded.heartbeat_at') }))),
    )
  }

  remove(id: number): void {
    run(this.#sqlite, mirrorQuery.deleteFrom('run_owners').where('id', '=', id))
  }

  /** Removes the row of an owner that has no running run left; true when it did. */
  prune(id: number): boolean {
    // Owners with no running run left: nothing would ever ask about them again.
    const query = mirrorQuery
      .deleteFrom('run_owners')
      .where('id', '=', id)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('sync_runs')
              .select('sync_runs.id')
              .where('sync_runs.outcome', '=', 'running')
              .whereRef('sync_runs.owner_id', '=', 'run_owners.id'),
          ),
        ),
      )
    return run(this.#sqlite, query) > 0
  }

  all(): RunOwner[] {
    // A plain statement, as the status report's other reads (`status` loads no query builder); the row is run_owners'.
    const found = this.#sqlite.prepare(`SELECT * FROM run_owners ORDER BY id`).all() as Selectable<RunOwnersTable>[]
    return found.map((r) => ({
      id: r.id,
      pid: r.pid,
      host: r.host,
      pidNamespace: r.pid_namespace,
      startedAt: r.started_at,
      heartbeatAt: r.heartbeat_at,
    }))
  }
}
