// src/store/sqlite/mirror-schema.ts is written by hand for kysely; this keeps it true to the migrations:
// every table it names must exist in a freshly migrated mirror with exactly its columns, each with
// the type and nullability the interface says.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

interface DeclaredColumn {
  /** The SQLite types the TypeScript type stands for. */
  types: string[]
  nullable: boolean
  generated: boolean
}

/** Table -> column -> what the interface declares, read from the source with the TypeScript parser. */
function declaredSchema(): Map<string, Map<string, DeclaredColumn>> {
  const file = path.join(ROOT, 'src/store/sqlite/mirror-schema.ts')
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const interfaces = new Map<string, ts.InterfaceDeclaration>()
  const aliases = new Map<string, ts.TypeNode>()
  sf.forEachChild((n) => {
    if (ts.isInterfaceDeclaration(n)) interfaces.set(n.name.text, n)
    if (ts.isTypeAliasDeclaration(n)) aliases.set(n.name.text, n.type)
  })
  const nameOf = (m: ts.TypeElement) => (m.name !== undefined && ts.isIdentifier(m.name) ? m.name.text : '?')
  const root = interfaces.get('MirrorSchema')
  if (root === undefined) throw new Error('mirror-schema.ts declares no MirrorSchema')
  const out = new Map<string, Map<string, DeclaredColumn>>()
  for (const member of root.members) {
    if (!ts.isPropertySignature(member) || member.type === undefined) throw new Error(`MirrorSchema.${nameOf(member)} has no type`)
    const tableInterface = interfaces.get(member.type.getText(sf))
    if (tableInterface === undefined) throw new Error(`MirrorSchema.${nameOf(member)}: ${member.type.getText(sf)} is not declared there`)
    const columns = new Map<string, DeclaredColumn>()
    for (const c of tableInterface.members) {
      if (!ts.isPropertySignature(c) || c.type === undefined) throw new Error(`${tableInterface.name.text}.${nameOf(c)} has no type`)
      columns.set(nameOf(c), column(c.type, sf, aliases))
    }
    out.set(nameOf(member), columns)
  }
  return out
}

function column(node: ts.TypeNode, sf: ts.SourceFile, aliases: ReadonlyMap<string, ts.TypeNode>): DeclaredColumn {
  let type = node
  let generated = false
  if (ts.isTypeReferenceNode(type) && type.typeName.getText(sf) === 'Generated' && type.typeArguments?.length === 1) {
    generated = true
    type = type.typeArguments[0]!
  }
  // A type alias of the same file (a union of literals) stands for what it names.
  const expand = (t: ts.TypeNode): ts.TypeNode[] => {
    const alias = ts.isTypeReferenceNode(t) ? aliases.get(t.typeName.getText(sf)) : undefined
    if (alias !== undefined) return expand(alias)
    return ts.isUnionTypeNode(t) ? t.types.flatMap(expand) : [t]
  }
  const parts = expand(type)
  const isNull = (t: ts.TypeNode) => ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword
  const types = new Set<string>()
  for (const t of parts.filter((p) => !isNull(p))) {
    const text = t.getText(sf)
    if (text === 'string' || (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal))) types.add('TEXT')
    else if (text === 'number') ['INTEGER', 'REAL'].forEach((x) => types.add(x))
    else if (text === 'Buffer') types.add('BLOB')
    else throw new Error(`a column typed ${text}: no SQLite type maps to it`)
  }
  return { types: [...types], nullable: parts.some(isNull), generated }
}

interface TableInfo {
  name: string
  type: string
  notnull: number
  dflt_value: string | null
  pk: number
}

/** SQLite's type affinity of a declared column type (`varchar(255)` is TEXT). */
function affinity(type: string): string {
  const t = type.toUpperCase()
  if (t.includes('INT')) return 'INTEGER'
  if (/CHAR|CLOB|TEXT/.test(t)) return 'TEXT'
  if (t === '' || t.includes('BLOB')) return 'BLOB'
  return 'REAL'
}

/** What differs between the declared schema and the mirror, one line per difference. */
function drift(sqlite: TempMirror['sqlite'], schema: Map<string, Map<string, DeclaredColumn>>): string[] {
  const problems: string[] = []
  for (const [table, declared] of schema) {
    const actual = sqlite.prepare(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`).all(table) as TableInfo[]
    if (actual.length === 0) {
      problems.push(`${table}: no such table in the mirror`)
      continue
    }
    const names = actual.map((c) => c.name)
    for (const name of declared.keys())
      if (!names.includes(name)) problems.push(`${table}.${name}: declared, but the mirror has no such column`)
    for (const c of actual) {
      const d = declared.get(c.name)
      if (d === undefined) {
        problems.push(`${table}.${c.name}: in the mirror, missing from the interface`)
        continue
      }
      // A STRICT table's primary key holds no NULL even where table_info says nullable.
      const notNull = c.notnull === 1 || c.pk > 0
      if (d.nullable === notNull)
        problems.push(`${table}.${c.name}: ${notNull ? 'NOT NULL' : 'nullable'} in the mirror, not in the interface`)
      if (!d.types.includes(affinity(c.type)))
        problems.push(`${table}.${c.name}: ${c.type} in the mirror, ${d.types.join('|')} in the interface`)
      const filled = c.dflt_value !== null || (c.pk > 0 && affinity(c.type) === 'INTEGER')
      if (d.generated && !filled) problems.push(`${table}.${c.name}: Generated, but the mirror neither defaults nor assigns it`)
    }
  }
  return problems
}

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

describe('the kysely schema of the mirror (src/store/sqlite/mirror-schema.ts)', () => {
  test('the parser reads the interface: tables, columns, types, nulls', () => {
    const schema = declaredSchema()
    expect(schema.size).toBeGreaterThan(5)
    expect(schema.get('sync_runs')?.get('id')).toEqual({ types: ['INTEGER', 'REAL'], nullable: false, generated: true })
    expect(schema.get('webhook_inbox')?.get('raw_bytes')).toEqual({ types: ['BLOB'], nullable: true, generated: false })
    expect(schema.get('sync_runs')?.get('outcome')).toEqual({ types: ['TEXT'], nullable: false, generated: false })
  })

  test('every table and column it declares matches PRAGMA table_info of a migrated mirror', () => {
    expect(drift(m.sqlite, declaredSchema())).toEqual([])
  })

  test('a column a migration adds, or one it makes nullable, is reported', () => {
    m.sqlite.exec(`ALTER TABLE webhook_state ADD COLUMN note TEXT`)
    const schema = declaredSchema()
    schema.get('run_owners')!.set('host', { types: ['TEXT'], nullable: true, generated: false })
    schema.get('mirror_probe')!.set('gone', { types: ['TEXT'], nullable: false, generated: false })
    expect(drift(m.sqlite, schema)).toEqual([
      'webhook_state.note: in the mirror, missing from the interface',
      'run_owners.host: NOT NULL in the mirror, not in the interface',
      'mirror_probe.gone: declared, but the mirror has no such column',
    ])
  })
})
