// The one change a partial status event (`job.status_changed`) makes without a full record
// (src/webhooks/delivery-applier.ts says why it is certain): the stored record's status column moves
// from `previous` to `next`, logged in change_log like any other change. Raw statements, prepared at first use: the
// webhook processor runs them for each such delivery.
import type { Statement } from 'better-sqlite3'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { quoteIdentifier } from '../../model/sql-names.js'

export class RecordStatusWriter {
  readonly #sqlite: Sqlite
  readonly #table: string
  readonly #column: string
  #statements: { move: Statement; log: Statement } | undefined

  /** `table` and `column`: the stream's table and the status column its partial event moves. */
  constructor(sqlite: Sqlite, table: string, column: string) {
    this.#sqlite = sqlite
    this.#table = table
    this.#column = column
  }

  /**
   * Sets the live record's status to `next` if it still shows `previous`, keeping its updated_at and
   * raw; returns true when it did. Run it in the transaction that settles the delivery.
   */
  move(id: string, previous: string, next: string, nowIso: string): boolean {
    this.#statements ??= {
      move: this.#sqlite
        .prepare(
          `UPDATE ${quoteIdentifier(this.#table)} SET ${quoteIdentifier(this.#column)} = ?, synced_at = ? WHERE id = ? AND deleted_at IS NULL AND ${quoteIdentifier(this.#column)} IS ? RETURNING updated_at`,
        )
        .pluck(),
      log: this.#sqlite.prepare(`INSERT INTO change_log (table_name, record_id, op, updated_at, changed_at) VALUES (?, ?, 'upsert', ?, ?)`),
    }
    // RETURNING updated_at of a record table: TEXT NOT NULL, or no row when nothing matched.
    const updatedAt = this.#statements.move.get(next, nowIso, id, previous) as string | undefined
    if (updatedAt === undefined) return false
    this.#statements.log.run(this.#table, id, updatedAt, nowIso)
    return true
  }
}
