// Which tables the destination replicates, and how each is declared: the one place the destination
// learns it. Every data table, and change_log.
import type { ColumnKind, TableSpec } from '../model/table-spec.js'
import type { Sqlite } from '../store/mirror-database.js'

/**
 * The tables to replicate. Until the stream declarations list every data table (DATA_TABLES in
 * connectors/index.ts, change_log among the store's state tables), they are read from the mirror's
 * own schema: each table a writer stamps with `synced_at`, the child tables keyed by their parent's
 * id, and change_log; a column ending in `_at` is a time, the others keep their SQLite type.
 */
export function destinationTables(sqlite: Sqlite): readonly TableSpec[] {
  const names = sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid`).pluck().all() as string[]
  const info = new Map(names.map((n) => [n, sqlite.pragma(`table_info("${n.replace(/"/g, '""')}")`) as PragmaColumn[]]))
  const synced = names.filter((n) => info.get(n)!.some((c) => c.name === 'synced_at'))
  const out: TableSpec[] = []
  for (const name of names) {
    const cols = info.get(name)!
    const pk = cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk)
    if (synced.includes(name)) out.push(spec(name, cols))
    else if (name === 'change_log') out.push({ ...spec(name, cols), role: 'state' })
    else {
      const parent = synced.find((p) => pk[0]?.name === `${p.replace(/s$/, '')}_id`)
      if (parent !== undefined) out.push({ ...spec(name, cols), parent: { table: parent, column: pk[0]!.name } })
    }
  }
  return out
}

interface PragmaColumn {
  name: string
  type: string
  notnull: number
  pk: number
}

function kindOf(c: PragmaColumn): ColumnKind {
  if (c.type === 'TEXT' && c.name.endsWith('_at')) return 'time'
  return c.type === 'REAL' ? 'real' : c.type === 'INTEGER' ? 'integer' : c.type === 'BLOB' ? 'bytes' : 'text'
}

function spec(name: string, cols: readonly PragmaColumn[]): TableSpec {
  return {
    name,
    description: name,
    role: 'data',
    primaryKey: cols
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name),
    columns: cols.map((c) => ({ name: c.name, kind: kindOf(c), nullable: c.notnull === 0 && c.pk === 0, description: c.name })),
  }
}
