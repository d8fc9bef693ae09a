// Stand-in until the stream registry declares every table as a TableSpec: the tables and views the
// migrations create, read back from an in-memory database (PRAGMA table_info), with kinds from the
// SQLite types; a table is data when a stream declares it (connectors/), and a child table names
// its parent as the record streams declare. catalogTables() is the one reader of this file.
import Database from 'better-sqlite3'
import { RECORD_STREAMS } from '../../connectors/index.js'
import type { ColumnKind, TableSpec } from '../model/table-spec.js'
import { MIGRATIONS } from '../store/migrations/index.js'
import { streamTables } from './streams.js'

const KIND: Readonly<Record<string, ColumnKind>> = { TEXT: 'text', INTEGER: 'integer', REAL: 'real', BLOB: 'bytes' }

export function declaredTables(): readonly TableSpec[] {
  const sqlite = new Database(':memory:')
  try {
    for (const statements of Object.values(MIGRATIONS)) for (const s of statements) sqlite.exec(s)
    const objects = sqlite
      .prepare(`SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
      .all() as { name: string; type: string }[]
    const data = new Set([...streamTables().values()].flat())
    const parents = new Map(RECORD_STREAMS.flatMap((s) => s.childTables.map((c) => [c.table, { table: s.table, column: c.parentColumn }])))
    return objects.map(({ name }): TableSpec => {
      const columns = sqlite.prepare(`SELECT name, type, "notnull" AS not_null, pk FROM pragma_table_info(?)`).all(name) as {
        name: string
        type: string
        not_null: number
        pk: number
      }[]
      return {
        name,
        description: '',
        role: data.has(name) ? 'data' : 'state',
        ...(parents.has(name) ? { parent: parents.get(name)! } : {}),
        primaryKey: columns
          .filter((c) => c.pk > 0)
          .sort((a, b) => a.pk - b.pk)
          .map((c) => c.name),
        columns: columns.map((c) => ({
          name: c.name,
          kind: KIND[c.type] ?? 'text',
          nullable: c.not_null === 0 && c.pk === 0,
          description: '',
        })),
      }
    })
  } finally {
    sqlite.close()
  }
}
