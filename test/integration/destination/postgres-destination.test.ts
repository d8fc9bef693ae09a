// The Postgres destination against a real server and a real mirror: initial load, changes in order,
// exactly once across re-applies, the type mapping, custom-object views, pruning, errors.
import { afterAll, beforeAll, describe, expect, inject, test, vi } from 'vitest'
import pg from 'pg'
import pino from 'pino'
import { systemClock } from '../../../src/model/clock.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { CalendarChangeStore } from '../../../src/store/repositories/calendar-changes.js'
import { replaceClientFields } from '../../../src/store/repositories/client-fields.js'
import { CustomObjectTypes } from '../../../src/store/repositories/custom-object-types.js'
import { columnNames, viewName } from '../../../src/store/repositories/custom-object-views.js'
import { ChangeLogConsumers, lastChangeSeq } from '../../../src/store/repositories/change-log-consumers.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import type { RecordRow } from '../../../src/model/rows.js'
import { runRetention } from '../../../src/store/repositories/retention.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { FakeClock } from '../../support/fake-clock.js'
import { freePort } from '../../support/free-port.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const logger = pino({ level: 'silent' })
const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const at = (s: number) => new Date(T0 + s * 1000).toISOString()

function job(id: string, updated: number, extra: Record<string, unknown> = {}, assignees: string[] = []): RecordRow {
  return {
    id,
    updated_at: at(updated),
    raw: JSON.stringify({ id, updatedAt: at(updated), ...extra }),
    columns: {
      job_number: `J-${id}`,
      job_status: 'scheduled',
      start_date_time: at(updated + 3600),
      schedule_later: 0,
      any_time: 1,
      total: 0.30000000000000004,
      job_address: JSON.stringify({ city: 'Paris', street: 'Rue "x"\ttab\nnewline\\' }),
      notes: null,
      created_at: at(0),
      ...extra,
    },
    children: [{ table: 'job_assignees', parentColumn: 'job_id', rows: assignees.map((u) => ({ job_id: id, user_id: u })) }],
  }
}

let m: TempMirror
let tables: TableSpec[]
let url: string
const dests: PostgresDestination[] = []

function destination(schema: string, options: { url?: string; tables?: TableSpec[] } = {}): PostgresDestination {
  const d = new PostgresDestination({
    url: options.url ?? url,
    schema,
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables: options.tables ?? tables,
    logger,
    clock: systemClock,
    batchSize: 7,
    retry: { minMs: 20, maxMs: 200 },
    pollMs: 20,
  })
  dests.push(d)
  return d
}

const writer = () => new RecordWriter(m.sqlite, 'jobs')
const write = (rows: RecordRow[]) => writer().upsert(rows, { now: new Date().toISOString(), replaceTies: true })

beforeAll(async () => {
  m = await tempMirror()
  // A few of the declared tables: jobs with their assignees, custom objects, the change log.
  const names = ['jobs', 'job_assignees', 'custom_object_types', 'custom_records', 'change_log']
  tables = destinationTables().filter((t) => names.includes(t.name))
  url = await createDatabase(inject('postgresUrl'))
})

afterAll(async () => {
  for (const d of dests) await d.close()
  await m.dispose()
})

describe('the Postgres destination', () => {
  test('loads the rows already in the mirror with COPY, then applies changes in order: an exact replica', async () => {
    write(Array.from({ length: 30 }, (_, i) => job(`j${i}`, i, {}, i % 3 === 0 ? ['u1', 'u2'] : [])))
    const d = destination('fsm')
    const first = await d.catchUp()
    expect(first.loaded).toBe('a new destination')
    expect(first.loadedRows).toBeGreaterThanOrEqual(30 + 20 + 30)
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])

    // Updates, a deletion, children replaced, a non-instant time, a brand new row.
    write([job('j1', 100, { job_status: 'done' }, ['u9']), job('j3', 101, {}, []), job('new', 102, { start_date_time: 'next tuesday' })])
    writer().markDeleted(['j2', 'never-seen'], at(103))
    const second = await d.catchUp()
    expect(second.loaded).toBeNull()
    expect(second.changesApplied).toBe(5)
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
    const [row] = await pgQuery(
      url,
      `SELECT start_date_time, any_time, job_address->>'city' AS city, deleted_at FROM fsm.jobs WHERE id = 'new'`,
    )
    expect(row).toEqual({ start_date_time: null, any_time: true, city: 'Paris', deleted_at: null })
    expect(await pgQuery(url, `SELECT user_id FROM fsm.job_assignees WHERE job_id = 'j1'`)).toEqual([{ user_id: 'u9' }])
    expect((await pgQuery(url, `SELECT count(*)::int AS n FROM fsm.job_assignees WHERE job_id = 'j3'`))[0]).toEqual({ n: 0 })
    expect(new ChangeLogConsumers(m.sqlite).get(d.consumerName)?.seq).toBe(second.cursor)
  })

  test('a batch applied again changes nothing, and an older version never replaces a newer one', async () => {
    const d = destination('fsm')
    await d.catchUp()
    const before = await pgQuery(url, `SELECT * FROM fsm.jobs ORDER BY id`)
    // As if the process died after Postgres committed and before anything else knew: the cursor goes back.
    await pgQuery(url, `UPDATE fsm._fsm_sync_state SET seq = 0`)
    const again = destination('fsm')
    const summary = await again.catchUp()
    expect(summary.loaded).toBeNull()
    expect(summary.changesApplied).toBeGreaterThan(30)
    expect(await pgQuery(url, `SELECT * FROM fsm.jobs ORDER BY id`)).toEqual(before)
    // A stale version offered directly loses against the stored one.
    await pgQuery(
      url,
      `INSERT INTO fsm.jobs AS t (account_id, id, updated_at, raw, synced_at, job_status) VALUES ('default', 'j1', '2000-01-01Z', '{}', now(), 'stale')
       ON CONFLICT (account_id, id) DO UPDATE SET job_status = excluded.job_status WHERE excluded.updated_at >= t.updated_at`,
    )
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
  })

  test('custom objects: one view per object with hostile names quoted, rebuilt with the schema', async () => {
    const types = new CustomObjectTypes(m.sqlite)
    const now = new Date().toISOString()
    const fields = [
      { name: 'Status', type: 'select' },
      { name: 'status', type: 'text' },
      { name: 'amount', type: 'number' },
      { name: `x"); DROP TABLE fsm.jobs; --`, type: 'text' },
      { name: 'tags', type: 'relation', relation: { multi: true } },
    ]
    types.store({ slug: 'pets', raw: { slug: 'pets' } }, { fields, pipeline: null, raw: { fields } }, now)
    const records = new RecordWriter(m.sqlite, 'custom_records', { scope: { column: 'slug', value: 'pets' } })
    const data = { Status: 'open', status: 'x', amount: 3.5, [`x"); DROP TABLE fsm.jobs; --`]: 'evil', tags: ['a', 'b'] }
    records.upsert(
      [
        {
          id: 'p/1',
          updated_at: at(5),
          raw: JSON.stringify({ data }),
          columns: { stage: 's1', data: JSON.stringify(data), created_at: at(1) },
        },
      ],
      { now, replaceTies: true },
    )
    const d = destination('fsm')
    await d.catchUp()
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
    const view = await pgQuery(url, `SELECT * FROM fsm.obj_pets`)
    expect(view).toHaveLength(1)
    expect(view[0]).toMatchObject({ id: 'p/1', stage: 's1', Status: 'open', data_status: 'x', amount: 3.5, tags: ['a', 'b'] })
    expect(view[0]![`x"); DROP TABLE fsm.jobs; --`]).toBe('evil')
    // The same column names as the mirror's own view.
    const mirrorView = m.sqlite.prepare(`SELECT * FROM obj_pets`).get() as Record<string, unknown>
    expect(Object.keys(view[0]!).sort()).toEqual(['account_id', ...Object.keys(mirrorView)].sort())

    // The schema changes (a field goes, one comes) with a record that uses it: both land together.
    const next = [{ name: 'colour', type: 'text' }]
    types.store({ slug: 'pets', raw: { slug: 'pets' } }, { fields: next, pipeline: null, raw: { fields: next } }, now)
    records.upsert([{ id: 'p/2', updated_at: at(6), raw: '{}', columns: { stage: null, data: '{"colour":"red"}', created_at: null } }], {
      now,
      replaceTies: true,
    })
    await d.catchUp()
    expect(await pgQuery(url, `SELECT id, colour FROM fsm.obj_pets ORDER BY id`)).toEqual([
      { id: 'p/1', colour: null },
      { id: 'p/2', colour: 'red' },
    ])
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
  })

  test('a restart rewrites nothing unchanged; a view is replaced in place when fields are added, and one Postgres refuses does not stop the data', async () => {
    const types = new CustomObjectTypes(m.sqlite)
    const now = new Date().toISOString()
    const store = (names: string[]) => {
      const fields = names.map((name) => ({ name, type: 'text' }))
      types.store({ slug: 'dogs', raw: { slug: 'dogs' } }, { fields, pipeline: null, raw: { fields } }, now)
    }
    const records = new RecordWriter(m.sqlite, 'custom_records', { scope: { column: 'slug', value: 'dogs' } })
    const dog = (id: string, s: number, data: Record<string, string>) =>
      records.upsert([{ id, updated_at: at(s), raw: '{}', columns: { stage: null, data: JSON.stringify(data), created_at: null } }], {
        now,
        replaceTies: true,
      })
    store(['name'])
    dog('d/1', 1, { name: 'Rex' })
    await destination('keep').catchUp()
    // A user's view over the replica's view, and a grant on it.
    await pgQuery(url, `CREATE VIEW keep.user_dogs AS SELECT id, name FROM keep.obj_dogs`)
    await pgQuery(url, `GRANT SELECT ON keep.obj_dogs TO PUBLIC`)
    const grants = `SELECT grantee FROM information_schema.role_table_grants WHERE table_schema = 'keep' AND table_name = 'obj_dogs' AND grantee = 'PUBLIC'`
    const versions = `SELECT xmin::text AS x FROM keep.custom_object_types ORDER BY slug`
    const before = await pgQuery(url, versions)

    // A restart (a new process, a `replicate`): the views and the tables compared by content are left alone.
    await destination('keep').catchUp()
    expect(await pgQuery(url, versions)).toEqual(before)
    expect(await pgQuery(url, grants)).toHaveLength(1)
    const [state] = await pgQuery(url, `SELECT views_hash, fingerprints FROM keep._fsm_sync_state`)
    expect(state!.views_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.parse(state!.fingerprints as string)).toHaveProperty('custom_object_types')

    // A field added: the view is replaced in place, the user's view and the grant survive.
    store(['name', 'breed'])
    dog('d/2', 2, { name: 'Ace', breed: 'collie' })
    const d = destination('keep')
    await d.catchUp()
    expect(await pgQuery(url, `SELECT id, name, breed FROM keep.obj_dogs ORDER BY id`)).toEqual([
      { id: 'd/1', name: 'Rex', breed: null },
      { id: 'd/2', name: 'Ace', breed: 'collie' },
    ])
    expect(await pgQuery(url, grants)).toHaveLength(1)
    expect(await pgQuery(url, `SELECT id FROM keep.user_dogs ORDER BY id`)).toEqual([{ id: 'd/1' }, { id: 'd/2' }])

    // A field the user's view reads goes away: Postgres refuses the new view; the data goes on, the error shows.
    store(['breed'])
    dog('d/3', 3, { breed: 'pug' })
    await d.catchUp()
    expect(await pgQuery(url, `SELECT id FROM keep.custom_records WHERE slug = 'dogs' ORDER BY id`)).toEqual([
      { id: 'd/1' },
      { id: 'd/2' },
      { id: 'd/3' },
    ])
    expect(d.status().lastError).toMatch(/view of custom object dogs/)
    expect(new ChangeLogConsumers(m.sqlite).get(d.consumerName)?.lastError).toMatch(/view of custom object dogs/)
    expect(await pgQuery(url, `SELECT id FROM keep.user_dogs ORDER BY id`)).toHaveLength(3)

    // Once the user's view is gone, the next start builds the view.
    await pgQuery(url, `DROP VIEW keep.user_dogs`)
    const again = destination('keep')
    await again.catchUp()
    expect(again.status().lastError).toBeNull()
    expect(await pgQuery(url, `SELECT id, breed FROM keep.obj_dogs ORDER BY id`)).toHaveLength(3)
    expect(await comparePostgres(m.sqlite, url, 'keep', tables)).toEqual([])

    // Each target has its own consumer row, named without the user or password; one removed by hand comes back with the next ack.
    const consumers = new ChangeLogConsumers(m.sqlite)
    const names = consumers.list().filter((c) => c.kind === 'destination')
    expect(names.map((c) => c.name).sort()).toEqual([destination('fsm').consumerName, again.consumerName].sort())
    expect(again.consumerName).toMatch(/^postgres:127\.0\.0\.1:\d+:fsm_test\w+:keep$/)
    expect(JSON.stringify(names)).not.toContain(new URL(url).password)
    consumers.remove(again.consumerName)
    dog('d/4', 4, { breed: 'lab' })
    await again.catchUp()
    expect(consumers.get(again.consumerName)).toMatchObject({ kind: 'destination', seq: again.status().cursor })
    // Gone for good, so that it holds no retention back in the tests below.
    await again.close()
    consumers.remove(again.consumerName)
  })

  test("views: client_properties as in the mirror; a rebuild drops only the views fsm-sync built, never a user's obj_ views", async () => {
    const names = ['clients', 'client_fields', 'custom_object_types', 'custom_records', 'change_log']
    const viewTables = destinationTables().filter((t) => names.includes(t.name))
    const now = new Date().toISOString()
    const client = (id: string, s: number, properties: unknown): RecordRow => ({
      id,
      updated_at: at(s),
      raw: '{}',
      columns: { properties: properties === null ? null : JSON.stringify(properties) },
    })
    const clients = new RecordWriter(m.sqlite, 'clients')
    clients.upsert(
      [
        client('c1', 1, [
          { id: 'f1', value: 'A-1' },
          { id: 'f2', value: 7 },
        ]),
        client('c2', 2, { f1: 'B-2', f2: { value: ['fri'] } }),
        client('c3', 3, [{ id: 'f1', value: 'gone' }]),
        client('c4', 4, null),
      ],
      { now, replaceTies: true },
    )
    clients.markDeleted(['c3'], at(5))
    replaceClientFields(m.sqlite, [{ id: 'f1', name: 'gateCode', label: 'Gate code', type: 'text', options: null, raw: '{}' }], now)
    const types = new CustomObjectTypes(m.sqlite)
    const store = (fieldNames: string[]) => {
      const fields = fieldNames.map((name) => ({ name, type: 'text' }))
      types.store({ slug: 'cats', raw: { slug: 'cats' } }, { fields, pipeline: null, raw: { fields } }, now)
    }
    store(['name'])
    const d = destination('uv', { tables: viewTables })
    await d.catchUp()

    const properties = `SELECT client_id, field_id, field_label, field_name, value FROM client_properties ORDER BY client_id, field_id`
    const mirrorRows = (m.sqlite.prepare(properties).all() as Record<string, unknown>[]).map((r) => ({ ...r, value: String(r.value) }))
    expect(mirrorRows).toHaveLength(4)
    expect(await pgQuery(url, properties.replace('FROM client_properties', 'FROM uv.client_properties'))).toEqual(mirrorRows)
    const columns = `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'uv' AND table_name = 'client_properties' ORDER BY ordinal_position`
    expect(await pgQuery(url, columns)).toEqual(
      ['account_id', 'client_id', 'field_id', 'field_label', 'field_name', 'value'].map((column_name) => ({
        column_name,
        data_type: 'text',
      })),
    )

    // The user's own views, named like fsm-sync's, beside them; the custom object's schema changes.
    await pgQuery(url, `CREATE VIEW uv.obj_mine AS SELECT 1 AS x; CREATE VIEW uv.obj_cats_names AS SELECT name FROM uv.obj_cats`)
    // The other tests' objects have views here too: these are the ones this test is about.
    const views = `SELECT table_name FROM information_schema.views WHERE table_schema = 'uv' AND table_name IN ('client_properties', 'obj_cats', 'obj_cats_names', 'obj_mine') ORDER BY 1`
    store(['name', 'age'])
    await d.catchUp()
    expect(await pgQuery(url, views)).toEqual(
      ['client_properties', 'obj_cats', 'obj_cats_names', 'obj_mine'].map((table_name) => ({ table_name })),
    )
    expect(d.status().lastError).toBeNull()

    // The object goes: its view goes, the user's views that do not read it stay.
    await pgQuery(url, `DROP VIEW uv.obj_cats_names`)
    m.sqlite.prepare(`DELETE FROM custom_object_types WHERE slug = 'cats'`).run()
    await d.catchUp()
    expect(await pgQuery(url, views)).toEqual(['client_properties', 'obj_mine'].map((table_name) => ({ table_name })))
    await d.close()
    new ChangeLogConsumers(m.sqlite).remove(d.consumerName)

    // A view of the user's own holding the name of one fsm-sync builds is left alone, and named; the data goes on.
    await pgQuery(url, `CREATE SCHEMA uvu; CREATE VIEW uvu.client_properties AS SELECT 'mine'::text AS x`)
    const other = destination('uvu', { tables: viewTables })
    await other.catchUp()
    expect(other.status().lastError).toMatch(/"uvu"."client_properties" that fsm-sync did not build is in the way/)
    expect(await pgQuery(url, `SELECT x FROM uvu.client_properties`)).toEqual([{ x: 'mine' }])
    expect(await comparePostgres(m.sqlite, url, 'uvu', viewTables)).toEqual([])
    await pgQuery(url, `DROP VIEW uvu.client_properties`)
    const next = destination('uvu', { tables: viewTables })
    await next.catchUp()
    expect(next.status().lastError).toBeNull()
    expect(await pgQuery(url, `SELECT count(*)::int AS n FROM uvu.client_properties`)).toEqual([{ n: 4 }])
    await other.close()
    await next.close()
    new ChangeLogConsumers(m.sqlite).remove(next.consumerName)
  })

  test('a table or column dropped by hand is created and loaded again: by replicate, after a failed load, and under the follower', async () => {
    const rows = `SELECT id, job_status, notes FROM re.jobs ORDER BY id`
    write(Array.from({ length: 5 }, (_, i) => job(`re${i}`, 3900 + i, { notes: `note ${i}` })))
    const first = destination('re')
    await first.catchUp()
    await first.close()
    const before = await pgQuery(url, rows)
    expect(before.length).toBeGreaterThanOrEqual(5)

    // The fix the refusal of a table of another shape gives: drop it, fsm-sync creates and loads it.
    await pgQuery(url, `DROP TABLE re.jobs`)
    expect((await destination('re').catchUp()).loaded).toBe('fsm-sync created the missing table jobs')
    expect(await pgQuery(url, rows)).toEqual(before)

    // A column dropped; the load after its DDL fails: the next start still loads.
    await pgQuery(url, `ALTER TABLE re.jobs DROP COLUMN job_status`)
    await pgQuery(
      url,
      `CREATE FUNCTION re.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no load now'; END $$;
       CREATE TRIGGER refuse BEFORE DELETE ON re.change_log FOR EACH STATEMENT EXECUTE FUNCTION re.refuse()`,
    )
    await expect(destination('re').catchUp()).rejects.toThrow(/no load now/)
    await pgQuery(url, `DROP TRIGGER refuse ON re.change_log`)
    expect((await destination('re').catchUp()).loaded).not.toBeNull()
    expect(await pgQuery(url, rows)).toEqual(before)

    // Under the running follower: its next write fails on the missing column, and it reconnects, adds it and loads.
    const follower = destination('re')
    follower.start()
    await expect.poll(() => follower.status().state, { timeout: 10_000, interval: 20 }).toBe('following')
    await pgQuery(url, `ALTER TABLE re.jobs DROP COLUMN notes`)
    write([job('j1', 4000, { notes: 'after the drop' })])
    await expect
      .poll(async () => (await pgQuery(url, `SELECT count(notes)::int AS n FROM re.jobs`).catch(() => [{ n: -1 }]))[0], {
        timeout: 10_000,
        interval: 20,
      })
      .toEqual({ n: m.sqlite.prepare(`SELECT count(notes) FROM jobs`).pluck().get() as number })
    // The rows are visible to another connection a moment before the follower's COMMIT returns and counts the load.
    await expect.poll(() => follower.status().loads, { timeout: 10_000, interval: 20 }).toBe(1)
    await follower.stop()
    expect(await comparePostgres(m.sqlite, url, 're', tables)).toEqual([])
    new ChangeLogConsumers(m.sqlite).remove(follower.consumerName)
  })

  test('calendar_changes is followed by fetched_at: new rows added, rows retention removed deleted, the others left alone', async () => {
    const calTables = destinationTables().filter((t) => t.name === 'calendar_changes' || t.name === 'change_log')
    const feed = new CalendarChangeStore(m.sqlite, 'calendar-a')
    const change = (key: string) => ({
      change_key: key,
      action: 'updated',
      visit_id: null,
      external_event_id: key,
      changed_at: at(1),
      raw: '{}',
    })
    feed.insert([change('a')], at(5))
    feed.insert([change('b'), change('c')], at(10))
    await destination('cal', { tables: calTables }).catchUp()
    const versions = `SELECT change_key, xmin::text AS x FROM cal.calendar_changes ORDER BY change_key`
    const before = await pgQuery<{ change_key: string; x: string }>(url, versions)
    expect(before.map((r) => r.change_key)).toEqual(['a', 'b', 'c'])

    feed.insert([change('d')], at(20))
    feed.insert([change('e')], at(30))
    // What retention does: the rows fetched longest ago go.
    m.sqlite.prepare(`DELETE FROM calendar_changes WHERE fetched_at < ?`).run(at(10))
    const d = destination('cal', { tables: calTables })
    await d.catchUp()
    expect(await comparePostgres(m.sqlite, url, 'cal', calTables)).toEqual([])
    const after = await pgQuery<{ change_key: string; x: string }>(url, versions)
    expect(after.map((r) => r.change_key)).toEqual(['b', 'c', 'd', 'e'])
    // The rows kept were not written again.
    expect(after.slice(0, 2)).toEqual(before.slice(1))
    // A restart writes nothing.
    await destination('cal', { tables: calTables }).catchUp()
    expect(await pgQuery(url, versions)).toEqual(after)
  })

  test('a destination behind what retention pruned is loaded again; a lagging consumer holds rows back', async () => {
    const d = destination('fsm')
    await d.catchUp()
    const consumers = new ChangeLogConsumers(m.sqlite)
    consumers.add('warehouse-etl', 'user', new Date().toISOString(), 0)
    const settings = {
      deliveriesDays: 'off',
      deliveryIdsDays: 'off',
      runsDays: 'off',
      calendarChangesDays: 'off',
      changeLogDays: 1,
      changeLogHoldDays: 'off',
      batchRows: 10,
      vacuumPages: 0,
    } as const
    const later = Date.now() + 3 * 86_400_000
    // The named consumer has read nothing: nothing goes.
    expect((await runRetention(m.sqlite, later, settings)).removed.change_log).toBe(0)
    const total = m.sqlite.prepare(`SELECT count(*) FROM change_log`).pluck().get() as number
    consumers.ack('warehouse-etl', 10, new Date().toISOString())
    expect((await runRetention(m.sqlite, later, settings)).removed.change_log).toBe(10)
    consumers.remove('warehouse-etl')

    // The destination stops following; the mirror changes and prunes past it.
    await d.close()
    write([job('j5', 500, { job_status: 'late' }, ['u5'])])
    const cursor = (await pgQuery<{ seq: string }>(url, `SELECT seq FROM fsm._fsm_sync_state`))[0]!.seq
    consumers.reset(d.consumerName, Number(cursor), new Date().toISOString())
    expect((await runRetention(m.sqlite, later, { ...settings, changeLogHoldDays: 2 })).removed.change_log).toBe(total - 10 + 1)
    const again = destination('fsm')
    const summary = await again.catchUp()
    expect(summary.loaded).toMatch(/pruned/)
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
  })

  test('a connection killed by the server mid-stream: the follower reconnects and catches up', async () => {
    const d = destination('fsm')
    d.start()
    for (let round = 0; round < 3; round++) {
      write(Array.from({ length: 20 }, (_, i) => job(`k${round}-${i}`, 1000 + round * 100 + i, {}, ['u1'])))
      await pgQuery(url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fsm-sync'`)
      await expect.poll(() => d.status().lagChanges, { timeout: 10_000, interval: 20 }).toBe(0)
    }
    await d.stop()
    expect(await comparePostgres(m.sqlite, url, 'fsm', tables)).toEqual([])
  })

  test('a batch cut off inside its transaction leaves nothing of it, cursor included; the next run applies it whole', async () => {
    const d = destination('cut')
    await d.catchUp()
    const state = async () => Number((await pgQuery<{ seq: string }>(url, `SELECT seq FROM cut._fsm_sync_state`))[0]!.seq)
    const before = await state()
    // Each row written to cut.jobs now takes a while: the batch is caught inside its transaction.
    await pgQuery(
      url,
      `CREATE FUNCTION cut.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;
       CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON cut.jobs FOR EACH ROW EXECUTE FUNCTION cut.slow()`,
    )
    write(Array.from({ length: 6 }, (_, i) => job(`cut${i}`, 3000 + i, {}, ['u1'])))
    const running = d.catchUp()
    running.catch(() => undefined)
    await expect
      .poll(
        async () =>
          (
            await pgQuery(
              url,
              `SELECT 1 FROM pg_stat_activity WHERE application_name = 'fsm-sync' AND query LIKE 'INSERT INTO "cut"."jobs"%'`,
            )
          ).length,
        { timeout: 10_000, interval: 10 },
      )
      .toBe(1)
    await pgQuery(url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fsm-sync'`)
    await expect(running).rejects.toThrow(/Postgres/)
    expect(await state()).toBe(before)
    expect(await pgQuery(url, `SELECT id FROM cut.jobs WHERE id LIKE 'cut%'`)).toEqual([])
    await pgQuery(url, `DROP TRIGGER slow ON cut.jobs`)
    const again = await d.catchUp()
    expect(again.loaded).toBeNull()
    expect(again.cursor).toBeGreaterThan(before)
    expect(await comparePostgres(m.sqlite, url, 'cut', tables)).toEqual([])
  })

  test('NUL, which Postgres text and jsonb refuse, is dropped on load and on apply', async () => {
    write([job('nul1', 2000, { notes: 'before\0after', job_address: '{"street":"x\\u0000y"}' })])
    const d = destination('nul')
    expect((await d.catchUp()).loaded).toBe('a new destination')
    write([job('nul2', 2001, { notes: 'again\0', properties: '["\\u0000"]' })])
    expect((await d.catchUp()).changesApplied).toBe(1)
    expect(await pgQuery(url, `SELECT id, notes, job_address->>'street' AS street FROM nul.jobs WHERE id LIKE 'nul%' ORDER BY id`)).toEqual(
      [
        { id: 'nul1', notes: 'beforeafter', street: 'xy' },
        { id: 'nul2', notes: 'again', street: 'Rue "x"\ttab\nnewline\\' },
      ],
    )
    expect(await comparePostgres(m.sqlite, url, 'nul', tables)).toEqual([])
  })

  test('back-off runs on the injected Clock: a refused connection is retried when the clock reaches the delay, which doubles', async () => {
    const clock = new FakeClock()
    // Nothing listens on a free port: each attempt is refused at once.
    const d = new PostgresDestination({
      url: `postgres://fsm:secret@127.0.0.1:${await freePort()}/warehouse`,
      schema: 'fsm',
      mirrorPath: m.path,
      mirror: m.sqlite,
      tables,
      logger,
      clock,
      retry: { minMs: 1_000, maxMs: 4_000 },
    })
    const failedOnce = async (errors: number) =>
      vi.waitFor(() => {
        expect(d.status().errors).toBe(errors)
        expect(clock.pending).toBe(1)
      })
    d.start()
    try {
      await failedOnce(1)
      await clock.advance(999)
      expect(d.status().errors).toBe(1)
      await clock.advance(1)
      await failedOnce(2)
      await clock.advance(1_999)
      expect(d.status()).toMatchObject({ errors: 2, state: 'error' })
      await clock.advance(1)
      await failedOnce(3)
    } finally {
      await d.stop()
    }
  })

  test('clear errors: a wrong password, a missing database, a table of another shape', async () => {
    const bad = new URL(url)
    bad.password = 'wrong-secret-value'
    await expect(destination('fsm', { url: bad.toString() }).catchUp()).rejects.toThrow(
      /refused the login of postgres .*check the user and password in FSM_POSTGRES_URL/,
    )
    await expect(destination('fsm', { url: bad.toString() }).catchUp()).rejects.not.toThrow(/wrong-secret-value/)
    const missing = new URL(url)
    missing.pathname = '/no_such_db'
    await expect(destination('fsm', { url: missing.toString() }).catchUp()).rejects.toThrow(
      /the database "no_such_db" does not exist.*CREATE DATABASE/,
    )
    await pgQuery(url, `CREATE SCHEMA odd; CREATE TABLE odd.jobs (id bigint PRIMARY KEY, updated_at text)`)
    await expect(destination('odd').catchUp()).rejects.toThrow(
      /"odd"."jobs" has column "id" of type bigint where text is expected: drop it/,
    )
  })

  test('a UTF-16 surrogate without its pair, which jsonb refuses, is loaded and applied as U+FFFD', async () => {
    // The server refuses the escape JSON.stringify writes for half an emoji.
    await expect(pgQuery(url, `SELECT '"\\ud800"'::jsonb`)).rejects.toMatchObject({ code: '22P02' })
    const cut = '\ud83d' // the first half of an emoji
    const payload = JSON.stringify({ id: 'sur1', cut, pair: '\ud83d\ude00' })
    expect(payload).toContain('\\ud83d"')
    write([{ ...job('sur1', 3000, { job_address: '"\\ud800"', notes: `x${cut}y` }), raw: payload }])
    const d = destination('sur')
    expect((await d.catchUp()).loaded).toBe('a new destination')
    write([{ ...job('sur2', 3001, { job_address: '{"a":"\\udc00 \\ud83d\\ude00 \\\\ud800"}', notes: cut }), raw: payload }])
    expect((await d.catchUp()).changesApplied).toBe(1)
    // Half an emoji in a text column: SQLite keeps its bytes, which read back as U+FFFD; the replica has what the mirror reads.
    const notes = (id: string) => (m.sqlite.prepare('SELECT notes FROM jobs WHERE id = ?').get(id) as { notes: string }).notes
    expect(notes('sur1')).toMatch(/^x\ufffd+y$/)
    expect(
      await pgQuery(
        url,
        `SELECT id, notes, job_address, raw->>'cut' AS cut, raw->>'pair' AS pair FROM sur.jobs WHERE id LIKE 'sur%' ORDER BY id`,
      ),
    ).toEqual([
      { id: 'sur1', notes: notes('sur1'), job_address: '\ufffd', cut: '\ufffd', pair: '\ud83d\ude00' },
      { id: 'sur2', notes: notes('sur2'), job_address: { a: '\ufffd \ud83d\ude00 \\ud800' }, cut: '\ufffd', pair: '\ud83d\ude00' },
    ])
    expect(await comparePostgres(m.sqlite, url, 'sur', tables)).toEqual([])
  })

  test('custom objects whose names collide after normalisation or at 63 bytes get views of their own, on a server whose strings take backslash escapes', async () => {
    // A database where standard_conforming_strings is off: the destination turns it on for its connection.
    const offUrl = await createDatabase(inject('postgresUrl'))
    await pgQuery(
      offUrl,
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database()); END $$`,
    )
    expect(await pgQuery(offUrl, `SHOW standard_conforming_strings`)).toEqual([{ standard_conforming_strings: 'off' }])
    const types = new CustomObjectTypes(m.sqlite)
    const now = new Date().toISOString()
    const long = 'é'.repeat(40) // 80 bytes: Postgres would cut both names to the same 63
    const fields = [
      { name: 'back\\', type: 'text' },
      { name: `${long}one`, type: 'text' },
      { name: `${long}two`, type: 'number' },
    ]
    const slugs = ['pet-care', 'pet_care', `${'p'.repeat(70)}-a`, `${'p'.repeat(70)}-b`]
    for (const slug of slugs) {
      types.store({ slug, raw: { slug } }, { fields, pipeline: null, raw: { fields } }, now)
      new RecordWriter(m.sqlite, 'custom_records', { scope: { column: 'slug', value: slug } }).upsert(
        [
          {
            id: `${slug}/1`,
            updated_at: at(7),
            raw: '{}',
            columns: { stage: 's', data: JSON.stringify({ 'back\\': slug, [`${long}one`]: 'one', [`${long}two`]: 2 }), created_at: null },
          },
        ],
        { now, replaceTies: true },
      )
    }
    const d = destination('fsm', { url: offUrl })
    await d.catchUp()
    expect(await comparePostgres(m.sqlite, offUrl, 'fsm', tables)).toEqual([])
    for (const slug of slugs) {
      const view = await pgQuery(offUrl, `SELECT * FROM fsm."${viewName(slug)}"`)
      const mirrorView = m.sqlite.prepare(`SELECT * FROM "${viewName(slug)}"`).all() as Record<string, unknown>[]
      expect(view).toHaveLength(1)
      expect(mirrorView).toHaveLength(1)
      expect(Object.keys(view[0]!).sort()).toEqual(['account_id', ...Object.keys(mirrorView[0]!)].sort())
      const [back, one, two] = columnNames(fields)
      expect(view[0]).toMatchObject({ id: `${slug}/1`, [back!]: slug, [one!]: 'one', [two!]: 2 })
      expect(mirrorView[0]).toMatchObject({ id: `${slug}/1`, [back!]: slug, [one!]: 'one', [two!]: 2 })
    }
  })

  test('catchUp goes on until a pass applies nothing: changes written while it runs are in when it returns', async () => {
    const d = destination('rep')
    await d.catchUp()
    write([job('r0', 900)])
    // The cursor's update waits on a lock the test holds: meanwhile the mirror gets more changes than a batch holds.
    await pgQuery(
      url,
      `CREATE FUNCTION rep.hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); RETURN NEW; END $$;
       CREATE TRIGGER hold BEFORE UPDATE ON rep._fsm_sync_state FOR EACH ROW EXECUTE FUNCTION rep.hold()`,
    )
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    try {
      await holder.query('SELECT pg_advisory_lock(4242)')
      const running = d.catchUp()
      await vi.waitFor(
        async () => {
          const waiting = await pgQuery(url, `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'`)
          expect(waiting).toHaveLength(1)
        },
        { timeout: 10_000, interval: 20 },
      )
      write(Array.from({ length: 20 }, (_, i) => job(`r${i + 1}`, 900)))
      await holder.query('SELECT pg_advisory_unlock(4242)')
      const summary = await running
      expect(summary.cursor).toBe(lastChangeSeq(m.sqlite))
      expect(summary.changesApplied).toBe(21)
      expect(await comparePostgres(m.sqlite, url, 'rep', tables)).toEqual([])
    } finally {
      await holder.end()
      await pgQuery(url, `DROP TRIGGER hold ON rep._fsm_sync_state`)
      await d.close()
      new ChangeLogConsumers(m.sqlite).remove(d.consumerName)
    }
  })
})
