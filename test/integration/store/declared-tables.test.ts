// Every table of a freshly migrated mirror is declared exactly once, as account data by the
// connectors (DATA_TABLES) or as the daemon's state by the store (STATE_TABLES), and each declared
// table has exactly the declared columns, in order, with their SQLite types, NOT NULL-ness and
// primary key. A migration that adds a table or a column nobody declared fails here.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { DATA_TABLES, DATA_VIEWS } from '../../../connectors/index.js'
import { sqliteType, type TableSpec } from '../../../src/model/table-spec.js'
import type { Sqlite } from '../../../src/store/sqlite/mirror-database.js'
import { STATE_TABLES } from '../../../src/store/repositories/state-tables.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeAll(async () => (m = await tempMirror()))
afterAll(() => m.dispose())

interface ColumnInfo {
  name: string
  type: string
  notnull: number
  pk: number
}

/** What the mirror has that the declarations do not say, and the other way round; [] when they agree. */
function mismatches(sqlite: Sqlite, declared: readonly TableSpec[]): string[] {
  const out: string[] = []
  const tables = sqlite
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`)
    .pluck()
    .all() as string[]
  const byName = new Map<string, TableSpec>()
  for (const t of declared) {
    if (byName.has(t.name)) out.push(`${t.name}: declared twice`)
    byName.set(t.name, t)
  }
  for (const name of tables) if (!byName.has(name)) out.push(`${name}: in the mirror, declared nowhere`)
  for (const t of declared) {
    if (!tables.includes(t.name)) {
      out.push(`${t.name}: declared, not in the mirror`)
      continue
    }
    const actual = (
      sqlite.prepare(`SELECT name, type, "notnull", pk FROM pragma_table_info(?) ORDER BY cid`).all(t.name) as ColumnInfo[]
    ).map(
      // An INTEGER PRIMARY KEY is the rowid: never NULL, though table_info does not say NOT NULL.
      (c) => `${c.name} ${c.type}${c.notnull === 1 || c.pk > 0 ? ' NOT NULL' : ''}${c.pk > 0 ? ` PK${c.pk}` : ''}`,
    )
    const expected = t.columns.map((c) => {
      const pk = t.primaryKey.indexOf(c.name) + 1
      return `${c.name} ${c.declaredType ?? sqliteType(c.kind)}${c.nullable ? '' : ' NOT NULL'}${pk > 0 ? ` PK${pk}` : ''}`
    })
    if (JSON.stringify(actual) !== JSON.stringify(expected))
      out.push(`${t.name}: the mirror has [${actual.join(', ')}], the declaration says [${expected.join(', ')}]`)
    for (const k of t.primaryKey) if (!t.columns.some((c) => c.name === k)) out.push(`${t.name}: key column ${k} is not declared`)
    if (t.parent !== undefined && !declared.some((p) => p.name === t.parent!.table))
      out.push(`${t.name}: parent ${t.parent.table} is not declared`)
  }
  return out
}

const ALL = [...DATA_TABLES, ...STATE_TABLES]

describe('the tables of the mirror are the declared tables', () => {
  test('every table is declared exactly once, with its columns, types, NOT NULL and key', () => {
    expect(mismatches(m.sqlite, ALL)).toEqual([])
  })

  test('account data and daemon state are told apart, and children come after their parents', () => {
    expect(DATA_TABLES.every((t) => t.role === 'data')).toBe(true)
    expect(STATE_TABLES.every((t) => t.role === 'state')).toBe(true)
    const order = DATA_TABLES.map((t) => t.name)
    for (const t of DATA_TABLES) if (t.parent !== undefined) expect(order.indexOf(t.parent.table)).toBeLessThan(order.indexOf(t.name))
  })

  test('the fixed views are declared, with their columns', () => {
    const views = m.sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name`).pluck().all() as string[]
    expect(views).toEqual(DATA_VIEWS.map((v) => v.name).sort())
    for (const v of DATA_VIEWS)
      expect(m.sqlite.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).pluck().all(v.name), v.name).toEqual(
        v.columns.map((c) => c.name),
      )
  })

  test('every table and column says what it holds', () => {
    for (const t of [...ALL, ...DATA_VIEWS]) {
      expect(t.description, t.name).toMatch(/\S/)
      for (const c of t.columns) expect(c.description, `${t.name}.${c.name}`).toMatch(/\S/)
    }
  })

  test('a column or a table a migration adds without a declaration is found', async () => {
    const other = await tempMirror()
    try {
      other.sqlite.exec(`ALTER TABLE clients ADD COLUMN undeclared TEXT`)
      other.sqlite.exec(`CREATE TABLE stray (id TEXT PRIMARY KEY) STRICT`)
      const found = mismatches(other.sqlite, ALL)
      expect(found).toHaveLength(2)
      expect(found[0]).toBe('stray: in the mirror, declared nowhere')
      expect(found[1]).toMatch(/^clients: the mirror has \[.*undeclared TEXT\]/)
    } finally {
      await other.dispose()
    }
  })
})
