// SQL lives in src/store (docs/architecture.md, "The store"): outside it, no code prepares a
// statement, runs a pragma or raw SQL, builds a kysely query, or holds the text of a statement.
// Callers in webhooks/, daemon/, sync/, cli/ and connectors/ use the store's repositories. The scan
// reads every source with the TypeScript parser; the few texts that must stay (SQL shown to the
// operator, never run by the product outside `fsm-sync query`) are listed below with the reason,
// and each entry must still be needed.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, test } from 'vitest'
import { ROOT } from '../../support/run-cli.js'
import { sourceFiles } from '../../support/source-files.js'

/** Calls that run SQL on a better-sqlite3 connection. `exec` on a regular expression is not one. */
const SQL_CALLS = new Set(['prepare', 'pragma', 'exec', 'iterate'])
/** Text shaped like a statement (the project writes SQL keywords in capitals). */
const STATEMENT =
  /\b(?:SELECT\b[\s\S]*\bFROM\b|INSERT\s+INTO\b|UPDATE\s+\S+\s+SET\b|DELETE\s+FROM\b|(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX|VIEW|TRIGGER)\b|PRAGMA\s+\w|BEGIN\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED)\b)/
/** Modules only the store may import: the query builder and the typed runner. */
const STORE_ONLY_MODULES = [/^kysely$/, /\/store\/typed-query\.js$/]

interface Allowance {
  /** The file, or the files a pattern matches. */
  file: string | RegExp
  /** What the allowed text contains; every other SQL text in the file is still refused. */
  text: RegExp
  why: string
}
const ALLOWED: readonly Allowance[] = [
  { file: 'src/daemon/demo-queries.ts', text: /./, why: '`fsm-sync demo` prints these and runs them through the read-only query' },
  { file: 'src/cli/query.ts', text: /^the statement, e\.g\./, why: "an example in `fsm-sync query`'s help" },
  { file: 'src/cli/demo.ts', text: /npx fsm-sync query "SELECT/, why: 'the demo tells the reader how to query the mirror' },
  {
    file: 'src/daemon/retention-job.ts',
    text: /sqlite3 '.*PRAGMA auto_vacuum=INCREMENTAL; VACUUM/,
    why: 'the command the operator runs by hand',
  },
  {
    // Every other finding in these files (a .prepare/.exec/.iterate/.pragma call) is still refused:
    // what they read from the mirror comes from src/store (mirror-snapshot.ts, change-log-consumers.ts).
    file: /^src\/destination\/postgres-(?:batch-writer|ddl|doctor|initial-load|restore|schema|session|state-row|upgrade|views)\.ts$/,
    text: /./,
    why: "Postgres statements (DDL, upserts, information_schema and pg_catalog queries) run on the warehouse's pg client, never on the mirror",
  },
  {
    file: /^src\/coordination\/(?:coordination-schema|leases|lease-watch|membership|request-starts|webhook-schema|shared-inbox|shared-secrets)\.ts$/,
    text: /./,
    why: "the replicas' membership, leases and shared webhook tables live in the destination's Postgres server, never in the mirror",
  },
  {
    file: 'src/export/parquet-writer.ts',
    text: /^(?:DROP|CREATE) TABLE /,
    why: "DuckDB statements on the export's own in-memory DuckDB, which writes the Parquet files; never on the mirror",
  },
]

interface Finding {
  file: string
  line: number
  what: string
  /** The text of a SQL literal, for the allowances. */
  text?: string
}

function findings(file: string, source: string): Finding[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true)
  const out: Finding[] = []
  const at = (node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
  // Constants bound to a regular expression literal in this file: `.exec` on one is not SQL either.
  const regexConsts = new Set<string>()
  const collect = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer !== undefined) {
      if (ts.isRegularExpressionLiteral(node.initializer) && (node.parent.flags & ts.NodeFlags.Const) !== 0) regexConsts.add(node.name.text)
    }
    ts.forEachChild(node, collect)
  }
  collect(sf)
  const isRegex = (e: ts.Expression) => ts.isRegularExpressionLiteral(e) || (ts.isIdentifier(e) && regexConsts.has(e.text))
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && SQL_CALLS.has(node.expression.name.text)) {
      const receiver = node.expression.expression
      if (!(node.expression.name.text === 'exec' && isRegex(receiver)))
        out.push({ file, line: at(node), what: `calls .${node.expression.name.text}()` })
    }
    if (ts.isStringLiteralLike(node) || ts.isTemplateExpression(node)) {
      const text = ts.isTemplateExpression(node) ? node.getText(sf).slice(1, -1) : node.text
      const inImport = ts.isImportDeclaration(node.parent) || ts.isExportDeclaration(node.parent)
      if (!inImport && STATEMENT.test(text)) out.push({ file, line: at(node), what: `holds SQL text "${text.slice(0, 50)}"`, text })
      if (inImport && STORE_ONLY_MODULES.some((m) => m.test(text))) out.push({ file, line: at(node), what: `imports ${text}` })
      // A template's parts are visited through the template itself.
      if (ts.isTemplateExpression(node)) return node.templateSpans.forEach((s) => visit(s.expression))
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
  return out
}

const fileMatches = (a: Allowance, file: string) => (typeof a.file === 'string' ? a.file === file : a.file.test(file))
const allowanceFor = (f: Finding) => ALLOWED.find((a) => fileMatches(a, f.file) && f.text !== undefined && a.text.test(f.text))

describe('SQL stays in src/store', () => {
  const files = [...sourceFiles('src'), ...sourceFiles('connectors')].filter((f) => !f.startsWith('src/store/')).sort()
  const found = files.flatMap((f) => findings(f, readFileSync(path.join(ROOT, f), 'utf8')))

  test('the scan finds each kind of SQL a source can hold', () => {
    const text = [
      'sqlite.prepare(`SELECT id FROM jobs`).all()',
      "db.pragma('busy_timeout = 0')",
      "sqlite.exec('BEGIN IMMEDIATE')",
      'const m = /x/.exec(message)',
      'const RE = /x/\nconst n = RE.exec(message)',
      "const q = 'DELETE FROM runs WHERE id = ?'",
      'const t = `UPDATE "${table}" SET a = 1`',
      "import { Kysely } from 'kysely'",
      "import { rows } from '../store/typed-query.js'",
      "log.info('select the streams from the config')",
    ].join('\n')
    expect(findings('x.ts', text).map((f) => `${f.line} ${f.what}`)).toEqual([
      '1 calls .prepare()',
      '1 holds SQL text "SELECT id FROM jobs"',
      '2 calls .pragma()',
      '3 calls .exec()',
      '3 holds SQL text "BEGIN IMMEDIATE"',
      '7 holds SQL text "DELETE FROM runs WHERE id = ?"',
      '8 holds SQL text "UPDATE "${table}" SET a = 1"',
      '9 imports kysely',
      '10 imports ../store/typed-query.js',
    ])
  })

  test('the scan covers src/ and connectors/ outside src/store', () => {
    for (const f of ['src/webhooks/inbox.ts', 'src/daemon/activity.ts', 'src/cli/status.ts', 'connectors/index.ts'])
      expect(files).toContain(f)
    expect(files.some((f) => f.startsWith('src/store/'))).toBe(false)
  })

  test('no file outside src/store prepares, runs or holds SQL', () => {
    expect(found.filter((f) => allowanceFor(f) === undefined).map((f) => `${f.file}:${f.line} ${f.what}`)).toEqual([])
  })

  test.each(ALLOWED.map((a) => [String(a.file), a] as const))('the allowance for %s is still needed', (_file, a) => {
    expect(found.some((f) => allowanceFor(f) === a)).toBe(true)
    // A pattern covers files that exist, and each of them still needs it.
    if (typeof a.file !== 'string') {
      const covered = files.filter((f) => fileMatches(a, f))
      expect(covered.length).toBeGreaterThan(0)
      for (const f of covered)
        expect(
          found.some((x) => x.file === f && allowanceFor(x) === a),
          f,
        ).toBe(true)
    }
  })
})
