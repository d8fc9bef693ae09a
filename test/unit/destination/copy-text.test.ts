// The two encoders of COPY text agree: SQLite's (initial loads) and JavaScript's (the reference the
// type mapping is written in), value by value, on values that need care.
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import type { SqlCell } from '../../../src/model/rows.js'
import type { ColumnSpec } from '../../../src/model/table-spec.js'
import { copyLineEncoder, copyLineSql, jsonValue, registerCopyFunctions } from '../../../src/destination/postgres-types.js'

const columns: ColumnSpec[] = [
  { name: 't', kind: 'text', nullable: true, description: '' },
  { name: 'at', kind: 'time', nullable: true, description: '' },
  { name: 'r', kind: 'real', nullable: true, description: '' },
  { name: 'i', kind: 'integer', nullable: true, description: '' },
  { name: 'f', kind: 'flag', nullable: true, description: '' },
  { name: 'j', kind: 'json', nullable: true, description: '' },
  { name: 'b', kind: 'bytes', nullable: true, description: '' },
]

const rows: (SqlCell | undefined)[][] = [
  ['plain', '2026-01-02T03:04:05.678Z', 0.1, 1, 1, '{"a":1}', Buffer.from([0, 255])],
  ['tab\there\nnew\\line\rcr "q" \'s\'', '2026-02-30T00:00:00.000Z', 0.30000000000000004, -9007199254740991, 0, '["\\t"]', null],
  [null, 'next tuesday', 1e21, null, null, null, Buffer.alloc(0)],
  ['é ü 漢字 🙂', '2024-02-29T23:59:59.999Z', -0.5, 0, 2, '"x\\ny"', null],
  ['', null, null, 42, null, '{}', null],
  ['no nul', null, null, null, null, '{"a":"x\\u0000y","b":"\\\\u0000"}', null],
  ['lone', null, null, null, null, '["\\ud800","\\uDBFF\\uDFFF","\\\\ud800","\\udc00x","\\ud83d\\ude00"]', null],
  ['years', '0000-01-01T00:00:00.000Z', null, null, null, null, null],
  ['years', '0001-01-01T00:00:00.000Z', null, null, null, null, null],
  ['years', '9999-12-31T23:59:59.999Z', null, null, null, null, null],
  ['years', '', null, null, null, null, null],
]
/** The time values above that are written as NULL although they hold something: not instants (isInstant). */
const NOT_INSTANTS = 3

test('SQLite writes the same COPY lines as the JavaScript encoder', () => {
  const db = new Database(':memory:')
  let nulled = 0
  registerCopyFunctions(db, () => nulled++)
  db.exec(`CREATE TABLE x (t TEXT, "at" TEXT, r REAL, i INTEGER, f INTEGER, j TEXT, b BLOB)`)
  const insert = db.prepare(`INSERT INTO x VALUES (?, ?, ?, ?, ?, ?, ?)`)
  for (const r of rows) insert.run(...r)
  const fromSqlite = db
    .prepare(`SELECT ${copyLineSql(columns)} FROM x ORDER BY rowid`)
    .pluck()
    .all() as string[]
  expect(nulled).toBe(NOT_INSTANTS)
  const encode = copyLineEncoder(columns, () => nulled++)
  // Reals may be spelled differently (1.0e+21, 1e+21) but must read back as the same double.
  const same = (line: string) => line.split('\t').map((f, i) => (i === 2 && f !== '\\N' ? Number(f) : f))
  expect(fromSqlite.map(same)).toEqual(rows.map((r) => same(encode(r))))
  expect(fromSqlite[2]).toBe('\\N\t\\N\t1.0e+21\t\\N\t\\N\t\\N\t\\\\x\n')
  expect(nulled).toBe(2 * NOT_INSTANTS)
  // Year 0000 fits the text form, not timestamptz; 0001 and 9999 are instants.
  expect(fromSqlite.slice(-4).map((l) => l.split('\t')[1])).toEqual(['\\N', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '\\N'])
  expect(jsonValue('time', '0000-12-31T23:59:59.999Z', () => nulled++)).toBeNull()
  expect(nulled).toBe(2 * NOT_INSTANTS + 1)
})

test('jsonb never sees the NUL escape it refuses; an escaped backslash before u0000 is kept', () => {
  expect(jsonValue('json', '{"a":"x\\u0000y","b":"\\\\u0000"}')).toEqual({ a: 'xy', b: '\\u0000' })
  expect(jsonValue('text', 'a\0b')).toBe('ab')
})

test('jsonb never sees a UTF-16 surrogate without its pair: an escaped one, or one in a JavaScript string, becomes U+FFFD', () => {
  expect(jsonValue('json', '["\\ud800","\\uDBFF\\uDFFF","\\\\ud800","\\udc00x","\\ud83d\\ude00"]')).toEqual([
    '\ufffd',
    '\udbff\udfff',
    '\\ud800',
    '\ufffdx',
    '\ud83d\ude00',
  ])
  expect(jsonValue('json', JSON.stringify({ cut: 'a\ud83d' }))).toEqual({ cut: 'a\ufffd' })
  expect(jsonValue('text', 'a\ud83db\ude00\ud83d\ude00')).toBe('a\ufffdb\ufffd\ud83d\ude00')
  expect(copyLineEncoder([{ name: 't', kind: 'text', nullable: true, description: '' }])(['x\udc00'])).toBe('x\ufffd\n')
})
