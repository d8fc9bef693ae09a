import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openMirror, type Mirror } from '../../../src/store/sqlite/mirror-database.js'
import { openReadOnlyQuery, QueryRefusedError, runReadOnlyQuery } from '../../../src/store/sqlite/read-only-query.js'
import { formatQueryResult } from '../../../src/cli/query-format.js'
import { queryParams } from '../../../src/cli/query.js'
import { viewStatements } from '../../../src/store/repositories/custom-object-views.js'
import { catalogTables } from '../../../src/catalog/catalog.js'
import { exportMirror } from '../../../src/export/export-mirror.js'
import { tempDir, tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let writer: TempMirror
let reader: Mirror
beforeAll(async () => {
  writer = await tempMirror()
  writer.sqlite.exec(
    `INSERT INTO clients (id, first_name, updated_at, raw, synced_at) VALUES ('a', 'Ann, "the" first', 't', '{}', 't'), ('b', NULL, 't', '{}', 't')`,
  )
  writer.sqlite.exec(
    `INSERT INTO custom_records (slug, id, data, updated_at, raw, synced_at) VALUES ('parts', 'p1', '{"code":"42","qty":3}', 't', '{}', 't')`,
  )
  for (const statement of viewStatements('parts', [{ name: 'code' }, { name: 'qty' }])) writer.sqlite.exec(statement)
  reader = await openMirror(path.join(writer.dir, 'mirror.db'), { readonly: true })
})
afterAll(async () => {
  await reader.close()
  await writer.dispose()
})

describe('query: one read-only statement', () => {
  test.each([
    'DELETE FROM clients',
    "UPDATE clients SET first_name = 'x'",
    "INSERT INTO clients (id, updated_at, raw, synced_at) VALUES ('z', 't', '{}', 't')",
    'DROP TABLE clients',
    'CREATE TABLE evil (x)',
    'PRAGMA journal_mode = DELETE',
    "ATTACH DATABASE '/tmp/fsm-query-test.db' AS x",
    "/* hidden */ attach '/tmp/fsm-query-test.db' as y",
    "VACUUM INTO '/tmp/fsm-query-test-copy.db'",
  ])('refuses %s', (sql) => {
    expect(() => runReadOnlyQuery(reader.sqlite, sql)).toThrow(QueryRefusedError)
    expect(writer.sqlite.prepare('SELECT count(*) FROM clients').pluck().get()).toBe(2)
    expect(existsSync('/tmp/fsm-query-test.db') || existsSync('/tmp/fsm-query-test-copy.db')).toBe(false)
  })

  test('a statement that does not compile is a clear error', () => {
    expect(() => runReadOnlyQuery(reader.sqlite, 'SELEC 1')).toThrow(/does not compile/)
  })

  test('formats: table, json, csv', () => {
    const r = runReadOnlyQuery(reader.sqlite, 'SELECT id, first_name FROM clients ORDER BY id')
    expect(JSON.parse(formatQueryResult(r, 'json'))).toEqual([
      { id: 'a', first_name: 'Ann, "the" first' },
      { id: 'b', first_name: null },
    ])
    // RFC 4180, as export writes it: CRLF line ends, NULL an empty field.
    expect(formatQueryResult(r, 'csv')).toBe('id,first_name\r\na,"Ann, ""the"" first"\r\nb,\r\n')
    const t = formatQueryResult(r, 'table')
    expect(t.split('\n')[0]).toMatch(/^id\s+first_name$/)
    expect(t).toContain('(2 rows)')
  })

  test('one rule with export: a JSON column is a JSON value, a flag true/false, the CSV the same bytes', async () => {
    const t = '2026-01-02T03:04:05.000Z'
    writer.sqlite
      .prepare(
        `INSERT INTO api_keys (id, name, scopes, is_active, created_at, updated_at, raw, synced_at) VALUES ('k1', 'ci, "main"', '["jobs:read"]', 1, ?, ?, '{"id":"k1","nested":{"a":[1]}}', ?)`,
      )
      .run(t, t, t)
    const sql = 'SELECT * FROM api_keys'
    const dir = tempDir()
    await exportMirror(reader.sqlite, catalogTables(), { format: 'csv', outDir: dir, tables: ['api_keys'], now: 0 })
    expect(formatQueryResult(runReadOnlyQuery(reader.sqlite, sql), 'csv')).toBe(readFileSync(path.join(dir, 'api_keys.csv'), 'utf8'))
    await exportMirror(reader.sqlite, catalogTables(), { format: 'jsonl', outDir: dir, tables: ['api_keys'], now: 0 })
    const lines = readFileSync(path.join(dir, 'api_keys.jsonl'), 'utf8').trim().split('\n')
    const json = JSON.parse(formatQueryResult(runReadOnlyQuery(reader.sqlite, sql), 'json')) as Record<string, unknown>[]
    expect(json).toEqual(lines.map((l) => JSON.parse(l) as unknown))
    expect(json[0]).toMatchObject({ scopes: ['jobs:read'], is_active: true, raw: { id: 'k1', nested: { a: [1] } } })
    // An expression has no kind: its value as SQLite gives it; a value that does not fit its kind, as it is.
    const r = runReadOnlyQuery(reader.sqlite, `SELECT json_extract(raw, '$.nested') AS nested, id, updated_at FROM clients ORDER BY id`)
    expect(JSON.parse(formatQueryResult(r, 'json'))).toEqual([
      { nested: null, id: 'a', updated_at: 't' },
      { nested: null, id: 'b', updated_at: 't' },
    ])
  })
})

describe('query parameters (`--param`)', () => {
  const rows = (sql: string, values: string[]) => {
    const { rows } = openReadOnlyQuery(reader.sqlite, sql, queryParams(sql, values))
    return [...rows]
  }

  test('? in order, :name by name, mixed; plain numbers bound as numbers, anything else as text', () => {
    expect(rows('SELECT id FROM clients WHERE id = ?', ['b'])).toEqual([['b']])
    expect(rows('SELECT id FROM clients WHERE id > :after ORDER BY id', ['after=a'])).toEqual([['b']])
    expect(rows('SELECT ? + 1, typeof(?), :n * 2, ?', ['41', '007', 'n=2.5', 'x=1'])).toEqual([[42, 'text', 5, 'x=1']])
    // `name=value` binds :name only when the statement has that parameter; in a literal it is not one.
    expect(rows("SELECT ?, ':k'", ['k=v'])).toEqual([['k=v', ':k']])
  })

  test('text:V and int:V bind V as that type; a JSON string in an obj_* view matches only as text', () => {
    expect(rows('SELECT typeof(?), ?, typeof(:n), :n', ['text:42', 'int:007', 'n=text:3.5'])).toEqual([['text', 7, 'text', '3.5']])
    expect(rows('SELECT ?', ['text:text:x'])).toEqual([['text:x']])
    expect(() => queryParams('SELECT ?', ['int:1.5'])).toThrow(/--param int:1\.5: int: takes a whole number .*pass text:1\.5/)
    expect(() => queryParams('SELECT ?', ['int:99999999999999999'])).toThrow(/int: takes a whole number/)
    // A custom object's view: every field column is a json_extract, with no type to convert a value to.
    const sql = 'SELECT id FROM obj_parts WHERE code = ?'
    expect(rows(sql, ['42'])).toEqual([])
    expect(rows(sql, ['text:42'])).toEqual([['p1']])
    expect(rows('SELECT id FROM obj_parts WHERE qty = ?', ['3'])).toEqual([['p1']])
  })

  test('too few or too many values: what to pass', () => {
    expect(() => rows('SELECT ?, ?', ['1'])).toThrow(/pass one --param VALUE per \? in order/)
    expect(() => rows('SELECT 1', ['1'])).toThrow(QueryRefusedError)
    expect(() => rows('SELECT :a', [])).toThrow(/--param name=VALUE per :name/)
  })
})
