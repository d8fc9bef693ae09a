// The one SQL quoter: identifiers and string literals, the same for SQLite, Postgres and DuckDB.
// No other file in src/ doubles a quote to build SQL, so a name from the account is quoted one way.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { quoteIdentifier, quoteText } from '../../../src/model/sql-names.js'
import { ROOT } from '../../support/run-cli.js'
import { sourceFiles } from '../../support/source-files.js'

describe('sql-names', () => {
  test('an identifier is double-quoted with its double quotes doubled', () => {
    expect(quoteIdentifier('jobs')).toBe('"jobs"')
    expect(quoteIdentifier('a"b""c')).toBe('"a""b""""c"')
    expect(quoteIdentifier("it's")).toBe(`"it's"`)
  })

  test('a text is single-quoted with its single quotes doubled', () => {
    expect(quoteText("it's")).toBe(`'it''s'`)
    expect(quoteText('a"b')).toBe(`'a"b'`)
  })

  test('no other file in src/ quotes a SQL name or text by hand', () => {
    // CSV doubles quotes too (src/export/encoding.ts), but that is a CSV field, not SQL.
    const allowed = new Set(['src/model/sql-names.ts', 'src/export/encoding.ts'])
    const doubling = /replace(?:All)?\((?:\/"\/g|'"'), '""'\)|replace(?:All)?\((?:\/'\/g|"'"), "''"\)/
    const offenders = sourceFiles('src').filter((f) => !allowed.has(f) && doubling.test(readFileSync(path.join(ROOT, f), 'utf8')))
    expect(offenders).toEqual([])
  })
})
