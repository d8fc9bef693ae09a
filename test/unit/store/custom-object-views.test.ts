import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CustomObjectTypes } from '../../../src/store/repositories/custom-object-types.js'
import { mirrorCatalog } from '../../../src/catalog/catalog.js'
import { objectViewSql } from '../../../src/destination/postgres-ddl.js'
import { exportMirror } from '../../../src/export/export-mirror.js'
import {
  columnNames,
  MAX_IDENTIFIER_BYTES,
  MAX_VIEW_FIELDS,
  viewName,
  viewStatements,
  viewWidthNote,
} from '../../../src/store/repositories/custom-object-views.js'
import { openReadOnlyQuery } from '../../../src/store/sqlite/read-only-query.js'
import { tempDir, tempMirror, type TempMirror } from '../../support/temp-mirror.js'

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
  test('an object of 2,000 fields: its view, the catalog, query, export and the Postgres view all take its first fields', async () => {
    const fields = Array.from({ length: 2000 }, (_, i) => ({ name: `f${i}`, type: 'text' }))
    insertRecord('wide', 'w1', Object.fromEntries(fields.map((f, i) => [f.name, `v${i}`])))
    new CustomObjectTypes(m.sqlite).store({ slug: 'wide', raw: {} }, { fields, pipeline: null, raw: { fields } }, 't')
    const columns = (m.sqlite.prepare(`SELECT name FROM pragma_table_info('obj_wide')`).pluck().all() as string[]).sort()
    expect(columns).toHaveLength(MAX_VIEW_FIELDS + 6)
    expect(columns).toContain(`f${MAX_VIEW_FIELDS - 1}`)
    expect(columns).not.toContain(`f${MAX_VIEW_FIELDS}`)
    // `fsm-sync query` on it, alone and joined to a table.
    const all = openReadOnlyQuery(m.sqlite, 'SELECT * FROM obj_wide')
    expect([...all.rows][0]).toContain(`v${MAX_VIEW_FIELDS - 1}`)
    const joined = openReadOnlyQuery(m.sqlite, 'SELECT * FROM obj_wide JOIN clients ON 0')
    expect([joined.columns.length > MAX_VIEW_FIELDS, [...joined.rows]]).toEqual([true, []])
    // The catalog describes exactly those columns and says where the others are; the export writes them.
    const spec = mirrorCatalog(m.sqlite).find((t) => t.name === 'obj_wide')!
    expect(spec.columns.map((c) => c.name).sort()).toEqual(columns)
    expect(spec.description).toContain(`the first ${MAX_VIEW_FIELDS} of its 2000 schema fields only`)
    const dir = tempDir()
    const manifest = await exportMirror(m.sqlite, mirrorCatalog(m.sqlite), { format: 'csv', outDir: dir, tables: ['obj_wide'], now: 0 })
    expect(manifest.tables[0]!.rows).toBe(1)
    expect(manifest.tables[0]!.columns).toHaveLength(MAX_VIEW_FIELDS + 6)
    // Postgres takes at most 1,664 entries in a select list.
    const pg = objectViewSql('fsm', { slug: 'wide', fields: JSON.stringify(fields) })
    expect(pg.match(/ AS "/g)).toHaveLength(MAX_VIEW_FIELDS)
    expect(MAX_VIEW_FIELDS + 6).toBeLessThanOrEqual(1664)
    expect([pg.includes(`AS "f${MAX_VIEW_FIELDS - 1}"`), pg.includes(`"f${MAX_VIEW_FIELDS}"`)]).toEqual([true, false])
    expect(viewWidthNote('wide', 2000)).toMatch(
      /^custom object wide has 2000 schema fields: its view obj_wide has columns for the first 1500 only, the other 500 are in custom_records.data/,
    )
    expect(viewWidthNote('narrow', MAX_VIEW_FIELDS)).toBeUndefined()
  })

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

  test('view names are unique after normalisation and within 63 bytes, and depend on the slug alone', () => {
    const long = 'a'.repeat(70)
    const slugs = ['pet_care', 'pet-care', 'pet care', 'Pet_care', 'pets', `${long}1`, `${long}2`, 'x_0123abcd', 'ünï', 'a'.repeat(59)]
    const names = slugs.map(viewName)
    expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(slugs.length)
    for (const n of names) {
      expect(Buffer.byteLength(n)).toBeLessThanOrEqual(MAX_IDENTIFIER_BYTES)
      expect(n).toMatch(/^obj_[A-Za-z0-9_]+$/)
    }
    // A plain slug keeps its plain name; the others get the slug's hash.
    expect(viewName('pet_care')).toBe('obj_pet_care')
    expect(viewName('pets')).toBe('obj_pets')
    expect(viewName('a'.repeat(59))).toBe(`obj_${'a'.repeat(59)}`)
    expect(viewName('pet-care')).toMatch(/^obj_pet_care_[0-9a-f]{8}$/)
    expect(viewName('x_0123abcd')).toMatch(/^obj_x_0123abcd_[0-9a-f]{8}$/)
    expect(viewName('pet-care')).toBe(viewName('pet-care'))
  })

  test('column names stay unique when fields share their first 63 bytes', () => {
    const prefix = 'é'.repeat(40) // 80 bytes
    const fields = [{ name: `${prefix}one` }, { name: `${prefix}two` }, { name: 'b'.repeat(63) }, { name: `${'b'.repeat(61)}_2` }]
    const cols = columnNames(fields)
    expect(new Set(cols.map((c) => c.toLowerCase())).size).toBe(cols.length)
    for (const c of cols) expect(Buffer.byteLength(c)).toBeLessThanOrEqual(MAX_IDENTIFIER_BYTES)
    expect(cols[2]).toBe('b'.repeat(63))
    expect(cols[0]!.startsWith('é')).toBe(true)
  })

  test('the mirror keeps one view per object when slugs collide after normalisation, and drops a view named by the old rule', () => {
    const types = new CustomObjectTypes(m.sqlite)
    const fields = [{ name: 'name' }]
    const slugs = ['pet-care', 'pet_care', 'pet care']
    for (const [i, slug] of slugs.entries()) {
      insertRecord(slug, `pc${i}`, { name: slug })
      types.store({ slug, raw: { slug } }, { fields, pipeline: null, raw: { fields } }, 't')
    }
    for (const [i, slug] of slugs.entries()) {
      expect(m.sqlite.prepare(`SELECT id, name FROM "${viewName(slug)}"`).all()).toEqual([{ id: `pc${i}`, name: slug }])
    }
    expect(types.withViews().map((t) => t.slug)).toEqual(expect.arrayContaining(slugs))
    // A mirror from before holds the view named by the old rule: it goes, the new one comes.
    const store = (slug: string) => types.store({ slug, raw: { slug } }, { fields, pipeline: null, raw: { fields } }, 't')
    insertRecord('dog-walk', 'dw', { name: 'dog' })
    store('dog-walk')
    m.sqlite.exec(`DROP VIEW "${viewName('dog-walk')}"; CREATE VIEW obj_dog_walk AS SELECT 1 AS old`)
    m.sqlite.prepare(`UPDATE custom_object_types SET view_name = 'obj_dog_walk' WHERE slug = 'dog-walk'`).run()
    store('dog-walk')
    expect(m.sqlite.prepare(`SELECT name FROM sqlite_master WHERE name = 'obj_dog_walk'`).all()).toEqual([])
    expect(m.sqlite.prepare(`SELECT id, name FROM "${viewName('dog-walk')}"`).all()).toEqual([{ id: 'dw', name: 'dog' }])
    // The old name of `pet-care` is the view of `pet_care` now: it stays.
    m.sqlite.prepare(`UPDATE custom_object_types SET view_name = 'obj_pet_care' WHERE slug = 'pet-care'`).run()
    store('pet-care')
    expect(m.sqlite.prepare(`SELECT id FROM obj_pet_care`).all()).toEqual([{ id: 'pc1' }])
  })
})
