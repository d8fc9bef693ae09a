// Contract tests over every connector at once: each column a mapper writes exists in the migrated
// table, and every stream's key and cursor field are in its rows.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { DATA_TABLES, RECORD_STREAMS, STREAMS } from '../../../connectors/index.js'
import { SELECTABLE_STREAMS, selectStreams } from '../../../connectors/selection.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeAll(async () => (m = await tempMirror()))
afterAll(() => m.dispose())

const columnsOf = (table: string) =>
  (m.sqlite.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => c.name)

const sample = {
  id: 'f'.repeat(24),
  updatedAt: '2026-01-01T00:00:00.000Z',
  createdAt: '2025-01-01T00:00:00.000Z',
  items: [{ name: 'x', quantity: 1, rate: 2 }],
  assignedToTeams: ['u'],
  teamId: ['u'],
}

describe.each(RECORD_STREAMS.map((s) => [s.name, s] as const))('connector %s', (_name, stream) => {
  test('every mapped column exists in its table', () => {
    const row = stream.toRow(sample)
    const cols = columnsOf(stream.table)
    for (const c of ['id', 'updated_at', 'deleted_at', 'raw', 'synced_at', 'created_at', ...Object.keys(row.columns)])
      expect(cols).toContain(c)
    for (const child of row.children ?? []) {
      const childCols = columnsOf(child.table)
      expect(childCols).toContain(child.parentColumn)
      for (const r of child.rows) for (const c of Object.keys(r)) expect(childCols).toContain(c)
    }
  })

  test('declares its child tables and a v1 route', () => {
    const row = stream.toRow(sample)
    expect((row.children ?? []).map((c) => c.table).sort()).toEqual(stream.childTables.map((c) => c.table).sort())
    expect(stream.route).toMatch(/^\/api\/v1\//)
    expect(row.id).toBe(sample.id)
    expect(row.updated_at).toBe(sample.updatedAt)
  })

  test('a payload without id or updatedAt is refused, not stored half-way', () => {
    expect(() => stream.toRow({ updatedAt: sample.updatedAt })).toThrow(/id/)
    expect(() => stream.toRow({ id: sample.id })).toThrow(/updatedAt/)
  })
})

describe('the stream registry', () => {
  test('each stream is declared once, and each data table by one stream', () => {
    const names = STREAMS.map((s) => s.name)
    expect(new Set(names).size).toBe(names.length)
    const tables = STREAMS.flatMap((s) => s.tables.map((t) => t.name))
    expect(new Set(tables).size).toBe(tables.length)
    expect(DATA_TABLES.map((t) => t.name).sort()).toEqual([...tables].sort())
  })

  test('the config selects every stream but the calendar feed and the triggers, in registry order', () => {
    expect(SELECTABLE_STREAMS).toEqual(STREAMS.filter((s) => s.kind !== 'feed' && s.kind !== 'trigger').map((s) => s.name))
    const all = selectStreams(undefined)
    expect(all.records.map((s) => s.name)).toEqual(['clients', 'jobs', 'visits', 'invoices'])
    expect(all.objects).toBe('all')
    expect(selectStreams(['invoices', 'clients', 'objects:x', 'nope']).records.map((s) => s.name)).toEqual(['clients', 'invoices'])
    expect(selectStreams(['objects:x', 'nope', 'clients:y'])).toMatchObject({ objects: ['x'], notBuilt: ['nope', 'clients:y'] })
  })
})
