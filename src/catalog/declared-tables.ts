// Stand-in until the stream registry declares every table as a TableSpec: the tables and views the
// migrations create, read back from an in-memory database (PRAGMA table_info), with kinds from the
// SQLite types. catalogTables() is the one reader of this file.
import Database from 'better-sqlite3'
import type { ColumnKind, TableSpec } from '../model/table-spec.js'
import { MIGRATIONS } from '../store/migrations/index.js'

const KIND: Readonly<Record<string, ColumnKind>> = { TEXT: 'text', INTEGER: 'integer', REAL: 'real', BLOB: 'bytes' }

export function declaredTables(): readonly TableSpec[] {
  const sqlite = new Database(':memory:')
  try {
    for (const statements of Object.values(MIGRATIONS)) for (const s of statements) sqlite.exec(s)
    const objects = sqlite
      .prepare(`SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY rowid`)
      .all() as { name: string; type: string }[]
    return objects.map(({ name }) => {
      const columns = sqlite.prepare(`SELECT name, type, "notnull" AS not_null, pk FROM pragma_table_info(?)`).all(name) as {
        name: string
        type: string
        not_null: number
        pk: number
      }[]
      return {
        name,
        description: '',
        role: columns.some((c) => c.name === 'raw') ? 'data' : 'state',
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
