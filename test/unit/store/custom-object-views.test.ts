import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { columnNames, viewName, viewStatements } from '../../../src/store/custom-object-views.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeAll(async () => (m = await tempMirror()))
afterAll(() => m.dispose())

const HOSTILE = ['select', 'a b', 'weird"name', "x'); DROP TABLE clients; --", '$x', '[0]', 'a.b', 'Status', 'status', 'id', 'ünïcode']

function insertRecord(slug: string, id: string, data: Record<string, unknown>) {
  m.sqlite
    .prepare(`INSERT INTO custom_records (slug, id, stage, data, updated_at, raw, synced_at) VALUES (?, ?, 'new', ?, 't', '{}', 't')`)
    .run(slug, id, JSON.stringify(data))
}

describe('obj_<slug> views', () => {
  test('hostile field names all work, harm nothing, and stay reachable', () => {
    const slug = 'equip\'ment"; --'
    const fields = HOSTILE.map((name) => ({ name }))
    const data = Object.fromEntries(HOSTILE.map((name, i) => [name, `v${i}`]))
    insertRecord(slug, 'r1', data)
    insertRecord('other', 'r2', data)
    for (const s of viewStatements(slug, fields)) m.sqlite.exec(s)
    const rows = m.sqlite.prepare(`SELECT * FROM "${viewName(slug)}"`).all() as Record<string, unknown>[]
    expect(rows).toHaveLength(1)
    const cols = columnNames(fields)
    for (const [i, col] of cols.entries()) expect(rows[0]![col]).toBe(`v${i}`)
    expect(rows[0]!.id).toBe('r1')
    // Nothing was dropped.
    expect(m.sqlite.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name = 'clients'`).get()).toEqual({ n: 1 })
  })

  test('fields colliding after normalisation get distinct columns', () => {
    const cols = columnNames([{ name: 'Status' }, { name: 'status' }, { name: 'id' }, { name: 'stage' }, { name: 'data_id' }])
    expect(new Set(cols.map((c) => c.toLowerCase())).size).toBe(cols.length)
    expect(cols).not.toContain('id')
    expect(cols[0]).toBe('Status')
  })

  test('a rebuilt view follows the schema: a field added, a field removed, no data lost', () => {
    insertRecord('jobsite', 'r3', { a: 1, b: 'two' })
    for (const s of viewStatements('jobsite', [{ name: 'a' }])) m.sqlite.exec(s)
    expect(m.sqlite.prepare('SELECT * FROM obj_jobsite').get()).toMatchObject({ id: 'r3', a: 1 })
    for (const s of viewStatements('jobsite', [{ name: 'b' }, { name: 'c' }])) m.sqlite.exec(s)
    const row = m.sqlite.prepare('SELECT * FROM obj_jobsite').get() as Record<string, unknown>
    expect(row).toMatchObject({ id: 'r3', b: 'two', c: null })
    expect(row).not.toHaveProperty('a')
    expect(JSON.parse((m.sqlite.prepare(`SELECT data FROM custom_records WHERE id = 'r3'`).get() as { data: string }).data)).toEqual({
      a: 1,
      b: 'two',
    })
  })
})
