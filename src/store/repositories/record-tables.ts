// Reads of a mirrored record table that the sync and the webhook processor need beside the record
// writer: which rows are live (reconciliation, complete snapshots) and, for custom records, which
// object a record id belongs to. Tables are named at run time (a stream's table), so these are
// plain statements with the name quoted, as in record-writer.ts.
import type { Sqlite } from '../sqlite/mirror-database.js'
import { quoteIdentifier } from '../../model/sql-names.js'

/** Only the rows where `column` holds `value` (custom_records of one slug), as RecordWriter's scope. */
export interface TableScope {
  column: string
  value: string
}

export class RecordTable {
  readonly #sqlite: Sqlite
  readonly #from: string
  readonly #args: string[]

  constructor(sqlite: Sqlite, table: string, options: { scope?: TableScope } = {}) {
    this.#sqlite = sqlite
    const scope = options.scope
    this.#from = `FROM ${quoteIdentifier(table)} WHERE ${scope === undefined ? '' : `${quoteIdentifier(scope.column)} = ? AND `}deleted_at IS NULL`
    this.#args = scope === undefined ? [] : [scope.value]
  }

  /** Ids of the rows not marked deleted; with `syncedBefore`, only those last stored before that instant. */
  liveIds(options: { syncedBefore?: string } = {}): string[] {
    const before = options.syncedBefore
    const sql = `SELECT id ${this.#from}${before === undefined ? '' : ' AND synced_at < ?'}`
    // `id` is TEXT in every record table (its primary key).
    return this.#sqlite
      .prepare(sql)
      .pluck()
      .all(...this.#args, ...(before === undefined ? [] : [before])) as string[]
  }

  /** How many rows are not marked deleted. */
  liveCount(): number {
    // count(*) is an integer.
    return this.#sqlite
      .prepare(`SELECT count(*) ${this.#from}`)
      .pluck()
      .get(...this.#args) as number
  }
}

/**
 * The slugs under which custom_records holds a record id (usually one; an id is unique per slug
 * only). Prepared once: the webhook processor asks it for every `object.deleted` without a slug.
 */
export function customRecordSlugs(sqlite: Sqlite): (id: string) => string[] {
  const slugOf = sqlite.prepare('SELECT slug FROM custom_records WHERE id = ?').pluck()
  // `slug` is TEXT NOT NULL.
  return (id) => slugOf.all(id) as string[]
}
