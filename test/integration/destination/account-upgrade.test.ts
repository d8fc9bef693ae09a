// A replica the previous release built (no account_id: its tables keyed by id alone, one state row
// keyed by id) is upgraded in place at the next start: its rows become account default's, the keys
// start with account_id, the cursor is kept (no load), and changes go on from it; an upgrade that
// fails midway leaves nothing of itself. The old shape is
// written here with the previous release's DDL (oldDdl), and filled from a replica of the same mirror.
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import pino from 'pino'
import { systemClock } from '../../../src/model/clock.js'
import { quoteIdentifier as q } from '../../../src/model/sql-names.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { pgType } from '../../../src/destination/postgres-types.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const logger = pino({ level: 'silent' })
const names = ['jobs', 'job_assignees', 'visits', 'custom_object_types', 'custom_records', 'change_log']
const tables = destinationTables().filter((t) => names.includes(t.name))
let m: TempMirror
let url: string

/** The previous release's DDL (postgres-ddl.ts before accounts): tables keyed by the mirror's key, the state row by id. */
function oldDdl(schema: string): string[] {
  const table = (t: TableSpec) => {
    const cols = t.columns.map((c) => {
      const notNull = t.primaryKey.includes(c.name) || (!c.nullable && c.kind !== 'time')
      return `${q(c.name)} ${pgType(c.kind)}${notNull ? ' NOT NULL' : ''}`
    })
    return `CREATE TABLE ${q(schema)}.${q(t.name)} (${[...cols, `PRIMARY KEY (${t.primaryKey.map(q).join(', ')})`].join(', ')})`
  }
  const index = (t: TableSpec) =>
    t.parent === undefined || t.primaryKey[0] === t.parent.column
      ? []
      : [`CREATE INDEX ${q(`${t.name}_${t.parent.column}`)} ON ${q(schema)}.${q(t.name)} (${q(t.parent.column)})`]
  return [
    `CREATE SCHEMA ${q(schema)}`,
    `CREATE TABLE ${q(schema)}._fsm_sync_state (id text PRIMARY KEY, seq bigint NOT NULL, tables_hash text NOT NULL, views_hash text,
       loaded_seq bigint NOT NULL, loaded_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, fingerprints text, mirror_id text)`,
    ...tables.flatMap((t) => [table(t), ...index(t)]),
  ]
}

const dests: PostgresDestination[] = []
function destination(schema: string): PostgresDestination {
  const d = new PostgresDestination({ url, schema, mirrorPath: m.path, mirror: m.sqlite, tables, logger, clock: systemClock })
  dests.push(d)
  return d
}

const now = () => new Date().toISOString()
const writeJobs = (ids: string[]) =>
  new RecordWriter(m.sqlite, 'jobs').upsert(
    ids.map((id) => ({
      id,
      updated_at: now(),
      raw: '{}',
      columns: { job_number: `J-${id}`, job_status: 'scheduled', created_at: now() },
      children: [{ table: 'job_assignees', parentColumn: 'job_id', rows: [{ job_id: id, user_id: 'u1' }] }],
    })),
    { now: now(), replaceTies: true },
  )

beforeAll(async () => {
  m = await tempMirror()
  url = await createDatabase(inject('postgresUrl'))
})

afterAll(async () => {
  for (const d of dests) await d.close()
  await m.dispose()
})

test("a previous release's replica is upgraded in place: rows and cursor kept, account default's, and it goes on from the cursor", async () => {
  writeJobs(Array.from({ length: 40 }, (_, i) => `j${i}`))
  // The rows and state the previous release would hold: a replica of this mirror, copied into the old shape.
  const fresh = destination('fresh')
  await fresh.catchUp()
  await fresh.close()
  for (const sql of oldDdl('old')) await pgQuery(url, sql)
  for (const t of tables) {
    const cols = t.columns.map((c) => q(c.name)).join(', ')
    await pgQuery(url, `INSERT INTO old.${q(t.name)} (${cols}) SELECT ${cols} FROM fresh.${q(t.name)}`)
  }
  await pgQuery(
    url,
    `INSERT INTO old._fsm_sync_state (id, seq, tables_hash, views_hash, loaded_seq, loaded_at, updated_at, fingerprints, mirror_id)
     SELECT id, seq, tables_hash, 'the previous release', loaded_seq, loaded_at, updated_at, fingerprints, mirror_id FROM fresh._fsm_sync_state`,
  )
  const jobs = `SELECT id, job_number, updated_at FROM old.jobs ORDER BY id`
  const before = await pgQuery(url, jobs)
  const [{ seq }] = (await pgQuery<{ seq: string }>(url, `SELECT seq FROM old._fsm_sync_state`)) as [{ seq: string }]

  // A table of the user's referencing change_log's key stops the upgrade midway: nothing of it stays.
  const hasAccount = `SELECT table_name FROM information_schema.columns WHERE table_schema = 'old' AND column_name = 'account_id'`
  await pgQuery(url, `CREATE TABLE old.mine (seq bigint REFERENCES old.change_log (seq))`)
  await expect(destination('old').catchUp()).rejects.toThrow(
    /cannot upgrade the replica in schema old to accounts \(nothing was changed\): .*change_log.*drop what depends/,
  )
  expect(await pgQuery(url, hasAccount)).toEqual([])
  await pgQuery(url, `DROP TABLE old.mine`)

  const d = destination('old')
  const first = await d.catchUp()
  expect(first.loaded).toBeNull()
  expect(first.cursor).toBe(Number(seq))
  expect(await pgQuery(url, jobs)).toEqual(before)
  expect(await pgQuery(url, `SELECT DISTINCT account_id FROM old.jobs`)).toEqual([{ account_id: 'default' }])
  const keys = await pgQuery<{ name: string; key: string }>(
    url,
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS key FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'old' AND i.indisprimary ORDER BY 1`,
  )
  expect(keys.find((k) => k.name === 'jobs')?.key).toMatch(/\(account_id, id\)$/)
  expect(keys.find((k) => k.name === '_fsm_sync_state')?.key).toMatch(/\(account_id, id\)$/)
  expect(keys.find((k) => k.name === 'change_log')?.key).toMatch(/\(account_id, seq\)$/)
  expect(await pgQuery(url, `SELECT account_id, seq FROM old._fsm_sync_state`)).toEqual([{ account_id: 'default', seq }])

  // It goes on from the cursor: a change is applied, no load.
  writeJobs(['j1', 'new'])
  const second = await destination('old').catchUp()
  expect(second).toMatchObject({ loaded: null, changesApplied: 2 })
  expect(await comparePostgres(m.sqlite, url, 'old', tables, 'default')).toEqual([])
  // Done once: the next start finds nothing to upgrade.
  expect((await destination('old').catchUp()).loaded).toBeNull()
})
