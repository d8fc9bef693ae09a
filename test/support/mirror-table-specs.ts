// TableSpec fixtures for the destination's tests, read from a real mirror's tables (PRAGMA
// table_info) with the kinds a test gives: small and independent of the stream registry.
import type Database from 'better-sqlite3'
import type { ColumnKind, TableSpec } from '../../src/model/table-spec.js'

export function specFromMirror(
  sqlite: Database.Database,
  name: string,
  kinds: Readonly<Record<string, ColumnKind>> = {},
  parent?: { table: string; column: string },
): TableSpec {
  const info = sqlite.pragma(`table_info(${name})`) as { name: string; type: string; notnull: number; pk: number }[]
  const base = (type: string): ColumnKind =>
    type === 'REAL' ? 'real' : type === 'INTEGER' ? 'integer' : type === 'BLOB' ? 'bytes' : 'text'
  return {
    name,
    description: `${name} (test fixture)`,
    role: name === 'change_log' ? 'state' : 'data',
    primaryKey: info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name),
    columns: info.map((c) => ({
      name: c.name,
      kind: kinds[c.name] ?? base(c.type),
      nullable: c.notnull === 0 && c.pk === 0,
      description: c.name,
    })),
    ...(parent === undefined ? {} : { parent }),
  }
}

const RECORD_TIMES = { created_at: 'time', updated_at: 'time', deleted_at: 'time', synced_at: 'time', raw: 'json' } as const

/** The tables the destination tests replicate: jobs with their assignees, custom objects, the change log. */
export function testTables(sqlite: Database.Database): TableSpec[] {
  return [
    specFromMirror(sqlite, 'jobs', {
      ...RECORD_TIMES,
      start_date_time: 'time',
      end_date_time: 'time',
      schedule_later: 'flag',
      any_time: 'flag',
      job_address: 'json',
      visits: 'json',
      properties: 'json',
    }),
    specFromMirror(sqlite, 'job_assignees', {}, { table: 'jobs', column: 'job_id' }),
    specFromMirror(sqlite, 'custom_object_types', {
      is_child_object: 'flag',
      fields: 'json',
      pipeline: 'json',
      raw: 'json',
      disabled_at: 'time',
      synced_at: 'time',
    }),
    specFromMirror(sqlite, 'custom_records', { ...RECORD_TIMES, data: 'json' }),
    specFromMirror(sqlite, 'change_log', { updated_at: 'time', changed_at: 'time' }),
  ]
}
