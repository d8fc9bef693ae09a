// Writes mirrored records: newer-wins upserts, child rows replaced with their parent, tombstones,
// and one change_log row per real change (contract.md, Guarantees 1 and 2). Synchronous by design:
// callers run it inside one SQLite transaction together with the cursor that covers the rows.
import type { Sqlite } from './mirror-database.js'

export type SqlValue = string | number | bigint | null

export interface ChildRows {
  table: string
  /** The child table's column holding the parent id. */
  parentColumn: string
  rows: Record<string, SqlValue>[]
}

export interface RecordRow {
  id: string
  /** Canonical UTC text; newer-wins compares it. */
  updated_at: string
  /** The latest full payload as received (JSON text). */
  raw: string
  /** Every other column of the table (snake_case), created_at included. */
  columns: Record<string, SqlValue>
  /** Child rows, replaced whenever the parent changes. Every table is listed even when empty. */
  children?: ChildRows[]
}

export interface UpsertOptions {
  /** Canonical time of the write (synced_at, change_log.changed_at). */
  now: string
  /**
   * When the rows were read from a list or GET, the canonical time that request started. A
   * record marked deleted before that moment and seen live since is live again: lists never show
   * deleted records. Webhook snapshots pass nothing: their order against a deletion is unknown.
   */
  observedAt?: string
  /**
   * Whether a row with the same updated_at but other content replaces the stored one. Sweeps are
   * full snapshots and two upstream writes can share a millisecond, so they replace; webhook
   * payloads may differ in shape from list rows, so they keep what is stored.
   */
  replaceTies: boolean
}

export interface WriteResult {
  changed: string[]
}

interface Statements {
  upsert: (row: RecordRow, options: UpsertOptions) => boolean
}

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`

export class RecordWriter {
  private readonly upserts = new Map<string, Statements['upsert']>()
  private readonly logChange: (p: { table: string; id: string; op: string; updatedAt: string | null; now: string }) => void
  private readonly tombstone
  private readonly markDeletedStmt

  constructor(
    private readonly sqlite: Sqlite,
    readonly table: string,
  ) {
    const log = sqlite.prepare(
      'INSERT INTO change_log (table_name, record_id, op, updated_at, changed_at) VALUES (@table, @id, @op, @updatedAt, @now)',
    )
    this.logChange = (p) => log.run(p)
    const t = quote(table)
    this.markDeletedStmt = sqlite.prepare(`UPDATE ${t} SET deleted_at = @now WHERE id = @id AND deleted_at IS NULL RETURNING updated_at`)
    // A deletion of a record never seen: keep a tombstone so that an older page still in flight
    // cannot bring it back as live (its observedAt precedes the deletion).
    this.tombstone = sqlite.prepare(
      `INSERT INTO ${t} (id, updated_at, raw, synced_at, deleted_at) VALUES (@id, '', @raw, @now, @now) ON CONFLICT(id) DO NOTHING`,
    )
  }

  upsert(rows: readonly RecordRow[], options: UpsertOptions): WriteResult {
    const changed: string[] = []
    for (const row of rows) {
      if (this.statementFor(row)(row, options)) {
        changed.push(row.id)
        this.logChange({ table: this.table, id: row.id, op: 'upsert', updatedAt: row.updated_at, now: options.now })
        for (const child of row.children ?? []) this.replaceChildren(row.id, child)
      }
    }
    return { changed }
  }

  /** Marks records deleted (never removes them). Returns the ids that changed. */
  markDeleted(ids: readonly string[], now: string): WriteResult {
    const changed: string[] = []
    for (const id of ids) {
      const hit = this.markDeletedStmt.get({ id, now }) as { updated_at: string } | undefined
      if (hit !== undefined) {
        changed.push(id)
        this.logChange({ table: this.table, id, op: 'delete', updatedAt: hit.updated_at || null, now })
      } else if (this.tombstone.run({ id, raw: JSON.stringify({ id }), now }).changes > 0) {
        changed.push(id)
        this.logChange({ table: this.table, id, op: 'delete', updatedAt: null, now })
      }
    }
    return { changed }
  }

  private statementFor(row: RecordRow): Statements['upsert'] {
    const names = Object.keys(row.columns)
    const signature = names.join(',')
    let fn = this.upserts.get(signature)
    if (fn !== undefined) return fn
    const t = quote(this.table)
    const all = ['id', 'updated_at', 'raw', 'synced_at', ...names]
    const params = all.map((n) => `@${paramName(n)}`)
    const sets = ['updated_at', 'raw', 'synced_at', ...names].map((n) => `${quote(n)} = excluded.${quote(n)}`)
    const stmt = this.sqlite.prepare(
      `INSERT INTO ${t} (${all.map(quote).join(', ')}) VALUES (${params.join(', ')})
       ON CONFLICT(id) DO UPDATE SET ${sets.join(', ')},
         deleted_at = CASE WHEN ${t}.deleted_at IS NOT NULL AND @observedAt IS NOT NULL AND ${t}.deleted_at < @observedAt
                           THEN NULL ELSE ${t}.deleted_at END
       WHERE excluded.updated_at > ${t}.updated_at
          OR (@replaceTies = 1 AND excluded.updated_at = ${t}.updated_at AND excluded.raw IS NOT ${t}.raw)
          OR (${t}.deleted_at IS NOT NULL AND @observedAt IS NOT NULL AND ${t}.deleted_at < @observedAt)
       RETURNING id`,
    )
    fn = (r, o) => {
      const p: Record<string, SqlValue> = {
        [paramName('id')]: r.id,
        [paramName('updated_at')]: r.updated_at,
        [paramName('raw')]: r.raw,
        [paramName('synced_at')]: o.now,
        observedAt: o.observedAt ?? null,
        replaceTies: o.replaceTies ? 1 : 0,
      }
      for (const n of names) p[paramName(n)] = r.columns[n] ?? null
      return stmt.get(p) !== undefined
    }
    this.upserts.set(signature, fn)
    return fn
  }

  private readonly childStatements = new Map<string, { del: (id: string) => void; ins: (row: Record<string, SqlValue>) => void }>()

  private replaceChildren(parentId: string, child: ChildRows): void {
    const first = child.rows[0]
    const key = `${child.table}:${child.parentColumn}:${first ? Object.keys(first).join(',') : ''}`
    let s = this.childStatements.get(key)
    if (s === undefined) {
      const t = quote(child.table)
      const del = this.sqlite.prepare(`DELETE FROM ${t} WHERE ${quote(child.parentColumn)} = ?`)
      const cols = first ? Object.keys(first) : []
      const ins =
        cols.length > 0
          ? this.sqlite.prepare(`INSERT INTO ${t} (${cols.map(quote).join(', ')}) VALUES (${cols.map((c) => `@${paramName(c)}`).join(', ')})`)
          : undefined
      s = {
        del: (id) => del.run(id),
        ins: (row) => {
          const p: Record<string, SqlValue> = {}
          for (const c of cols) p[paramName(c)] = row[c] ?? null
          ins?.run(p)
        },
      }
      this.childStatements.set(key, s)
    }
    s.del(parentId)
    for (const row of child.rows) s.ins(row)
  }
}

/** Column names come from connectors (and custom schemas): make them safe parameter names. */
function paramName(column: string): string {
  return `c_${column.replace(/[^A-Za-z0-9_]/g, (ch) => `_${ch.charCodeAt(0).toString(16)}_`)}`
}
