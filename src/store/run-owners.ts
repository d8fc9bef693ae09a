// The processes that own runs (run_owners): one row per live process, refreshed by one UPDATE per
// heartbeat, never one per run or per row.
import type { Sqlite } from './mirror-database.js'
import type { ProcessIdentity, RunOwner } from './owner-liveness.js'

interface OwnerRow {
  id: number
  pid: number
  host: string
  pid_namespace: string
  started_at: string
  heartbeat_at: string
}

export class RunOwnerStore {
  readonly #insert
  readonly #beat
  readonly #remove
  readonly #all
  readonly #prune

  constructor(sqlite: Sqlite) {
    this.#insert = sqlite.prepare(
      `INSERT INTO run_owners (pid, host, pid_namespace, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
    )
    // An upsert: an owner taken for gone during a long stall (and removed) comes back as it was.
    this.#beat = sqlite.prepare(
      `INSERT INTO run_owners (id, pid, host, pid_namespace, started_at, heartbeat_at) VALUES (@id, @pid, @host, @pidNamespace, @startedAt, @now)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
    )
    this.#remove = sqlite.prepare(`DELETE FROM run_owners WHERE id = ?`)
    this.#all = sqlite.prepare(`SELECT * FROM run_owners ORDER BY id`)
    // Owners with no running run left: nothing would ever ask about them again.
    this.#prune = sqlite.prepare(
      `DELETE FROM run_owners WHERE id = ? AND NOT EXISTS (SELECT 1 FROM sync_runs WHERE outcome = 'running' AND owner_id = run_owners.id)`,
    )
  }

  register(self: ProcessIdentity, startedAt: string, now: string): number {
    return (this.#insert.get(self.pid, self.host, self.pidNamespace, startedAt, now) as { id: number }).id
  }

  beat(owner: Omit<RunOwner, 'heartbeatAt'>, now: string): void {
    this.#beat.run({ ...owner, now })
  }

  remove(id: number): void {
    this.#remove.run(id)
  }

  /** Removes the row of an owner that has no running run left; true when it did. */
  prune(id: number): boolean {
    return this.#prune.run(id).changes > 0
  }

  all(): RunOwner[] {
    return (this.#all.all() as OwnerRow[]).map((r) => ({
      id: r.id,
      pid: r.pid,
      host: r.host,
      pidNamespace: r.pid_namespace,
      startedAt: r.started_at,
      heartbeatAt: r.heartbeat_at,
    }))
  }
}
