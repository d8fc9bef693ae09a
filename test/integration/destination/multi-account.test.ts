// Many accounts in one Postgres schema: two mirrors built against the emulator (two accounts of one
// emulator) replicate side by side, each account's rows equal to its mirror; a re-seed of one leaves
// the other's rows alone while it goes on applying; the obj_ views are the union of the accounts'
// objects; the process's connections stay within maxConnections.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import pg from 'pg'
import pino from 'pino'
import { systemClock } from '../../../src/model/clock.js'
import { DestinationPool, IDLE_TIMEOUT_MS } from '../../../src/destination/destination-pool.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { lastChangeSeq } from '../../../src/store/repositories/change-log-consumers.js'
import { CustomObjectTypes } from '../../../src/store/repositories/custom-object-types.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import type { Sqlite } from '../../../src/store/sqlite/mirror-database.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { FakeClock } from '../../support/fake-clock.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { syncEnv, type SyncEnv } from '../../support/sync-env.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const logger = pino({ level: 'silent' })
const tables = destinationTables()
const limits = { lockTimeoutMs: 30_000, statementTimeoutMs: 900_000 }
const caughtUp = (d: PostgresDestination, sqlite: Sqlite) => d.status().cursor === lastChangeSeq(sqlite)

let url: string
let emu: EmulatorEnv
let envs: SyncEnv[]
const cleanup: (() => Promise<void>)[] = []

function destination(schema: string, accountId: string, mirror: { path: string; sqlite: Sqlite }, pool: DestinationPool) {
  const d = new PostgresDestination({
    url: pool.settings.url,
    schema,
    accountId,
    pool,
    mirrorPath: mirror.path,
    mirror: mirror.sqlite,
    tables,
    logger,
    clock: systemClock,
    batchSize: 50,
    pollMs: 20,
    retry: { minMs: 20, maxMs: 200 },
  })
  cleanup.unshift(() => d.stop())
  return d
}

function pool(maxConnections: number, on = url): DestinationPool {
  const p = new DestinationPool({ url: on, limits, clock: systemClock, maxConnections })
  cleanup.push(() => p.end())
  return p
}

const mirrorOf = (env: SyncEnv) => ({ path: env.db, sqlite: env.app.mirror.sqlite })

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'))
  emu = await emulatorEnv({ accounts: 2, counts: { clients: 12, jobs: 15, visitsPerJob: 1, invoices: 8, customRecords: 6 } })
  envs = []
  for (const account of emu.accounts) {
    const env = await syncEnv({ ...emu, apiKey: account.apiKey })
    await env.sync()
    envs.push(env)
  }
}, 90_000)

afterAll(async () => {
  for (const c of cleanup) await c()
  for (const env of envs ?? []) await env.close()
  await emu?.close()
})

describe('many accounts in one schema', () => {
  test("two accounts' mirrors replicate into one schema: the rows of each account_id equal its mirror", { timeout: 60_000 }, async () => {
    const p = pool(2)
    const [a, b] = [destination('wh', 'a', mirrorOf(envs[0]!), p), destination('wh', 'b', mirrorOf(envs[1]!), p)]
    expect((await a.catchUp()).loaded).toBe('a new destination')
    expect((await b.catchUp()).loaded).toBe('a new destination')
    const perAccount = await pgQuery<{ account_id: string; n: number }>(
      url,
      `SELECT account_id, count(*)::int AS n FROM wh.jobs GROUP BY account_id ORDER BY account_id`,
    )
    expect(perAccount.map((r) => r.account_id)).toEqual(['a', 'b'])
    expect(perAccount.every((r) => r.n > 0)).toBe(true)
    expect(await comparePostgres(envs[0]!.app.mirror.sqlite, url, 'wh', tables, 'a')).toEqual([])
    expect(await comparePostgres(envs[1]!.app.mirror.sqlite, url, 'wh', tables, 'b')).toEqual([])
    // The key of every table starts with the account; the state is kept per account.
    const keys = await pgQuery<{ name: string; first: string }>(
      url,
      `SELECT c.relname AS name, a.attname AS first FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
        WHERE n.nspname = 'wh' AND i.indisprimary`,
    )
    expect(keys.length).toBe(tables.length + 2)
    expect(keys.filter((k) => k.first !== 'account_id')).toEqual([])
    const state = await pgQuery<{ account_id: string; seq: string }>(
      url,
      `SELECT account_id, seq FROM wh._fsm_sync_state ORDER BY account_id`,
    )
    expect(state.map((s) => [s.account_id, Number(s.seq)])).toEqual([
      ['a', a.status().cursor],
      ['b', b.status().cursor],
    ])
  })

  test("obj_ views are the union of the accounts' objects, a field typed differently exposed as text", async () => {
    const now = new Date().toISOString()
    const [sa, sb] = [envs[0]!.app.mirror.sqlite, envs[1]!.app.mirror.sqlite]
    const kit = (sqlite: Sqlite, fields: { name: string; type: string }[]) =>
      new CustomObjectTypes(sqlite).store({ slug: 'kit', raw: { slug: 'kit' } }, { fields, pipeline: null, raw: { fields } }, now)
    kit(sa, [
      { name: 'size', type: 'number' },
      { name: 'colour', type: 'text' },
    ])
    kit(sb, [
      { name: 'size', type: 'text' },
      { name: 'weight', type: 'number' },
    ])
    const record = (sqlite: Sqlite, slug: string, data: Record<string, unknown>) =>
      new RecordWriter(sqlite, 'custom_records', { scope: { column: 'slug', value: slug } }).upsert(
        [{ id: `${slug}/1`, updated_at: now, raw: '{}', columns: { stage: null, data: JSON.stringify(data), created_at: now } }],
        { now, replaceTies: true },
      )
    record(sa, 'kit', { size: 3, colour: 'red' })
    record(sb, 'kit', { size: 'XL', weight: 2.5 })
    // Account b has a record of an object it does not declare: it adds no row to obj_solo.
    new CustomObjectTypes(sa).store({ slug: 'solo', raw: { slug: 'solo' } }, { fields: [], pipeline: null, raw: { fields: [] } }, now)
    record(sa, 'solo', {})
    record(sb, 'solo', {})
    const p = pool(2)
    await destination('wh', 'a', mirrorOf(envs[0]!), p).catchUp()
    await destination('wh', 'b', mirrorOf(envs[1]!), p).catchUp()
    const columns = await pgQuery(
      url,
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'wh' AND table_name = 'obj_kit' ORDER BY ordinal_position`,
    )
    expect(columns.filter((c) => ['account_id', 'size', 'colour', 'weight'].includes(c.column_name as string))).toEqual([
      { column_name: 'account_id', data_type: 'text' },
      { column_name: 'size', data_type: 'text' },
      { column_name: 'colour', data_type: 'text' },
      { column_name: 'weight', data_type: 'double precision' },
    ])
    expect(await pgQuery(url, `SELECT account_id, size, colour, weight FROM wh.obj_kit ORDER BY account_id`)).toEqual([
      { account_id: 'a', size: '3', colour: 'red', weight: null },
      { account_id: 'b', size: 'XL', colour: null, weight: 2.5 },
    ])
    expect(await pgQuery(url, `SELECT account_id, id FROM wh.obj_solo`)).toEqual([{ account_id: 'a', id: 'solo/1' }])
    // The fixed views carry the account too, each account's clients with its own fields.
    const properties = await pgQuery<{ account_id: string }>(url, `SELECT DISTINCT account_id FROM wh.client_properties ORDER BY 1`)
    expect(properties.every((r) => ['a', 'b'].includes(r.account_id))).toBe(true)
  })

  test("a re-seed of one account replaces its rows only, while the other's changes go on being applied", { timeout: 60_000 }, async () => {
    const [sa, sb] = [envs[0]!.app.mirror.sqlite, envs[1]!.app.mirror.sqlite]
    const p = pool(2)
    const a = destination('wh', 'a', mirrorOf(envs[0]!), p)
    const b = destination('wh', 'b', mirrorOf(envs[1]!), p)
    await b.catchUp()
    b.start()
    const aRows = `SELECT count(*)::int AS n FROM wh.jobs WHERE account_id = 'a'`
    const before = await pgQuery(url, aRows)
    // A session holding account a's state row keeps a's load open, its rows deleted and copied but not committed.
    const holder = new pg.Client({ connectionString: url })
    await holder.connect()
    await holder.query(`BEGIN`)
    await holder.query(`SELECT 1 FROM wh._fsm_sync_state WHERE account_id = 'a' FOR UPDATE`)
    const reseed = a.catchUp({ reseed: true })
    const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'fsm-sync' AND wait_event_type = 'Lock'`
    await expect.poll(async () => (await pgQuery<{ n: number }>(url, waiting))[0]!.n, { timeout: 20_000, interval: 20 }).toBe(1)

    // Meanwhile account b's mirror changes, and b applies the change.
    const [job] = envs[1]!.rows(`SELECT id FROM jobs WHERE deleted_at IS NULL ORDER BY id LIMIT 1`) as { id: string }[]
    new RecordWriter(sb, 'jobs').markDeleted([job!.id], new Date().toISOString())
    await expect.poll(() => caughtUp(b, sb), { timeout: 20_000, interval: 20 }).toBe(true)
    expect(await comparePostgres(sb, url, 'wh', tables, 'b')).toEqual([])
    // Readers still see account a's rows as they were: the load's transaction is open.
    expect(await pgQuery(url, aRows)).toEqual(before)
    expect((await pgQuery<{ n: number }>(url, waiting))[0]!.n).toBe(1)

    await holder.query('ROLLBACK')
    await holder.end()
    expect((await reseed).loaded).toBe('asked for (--reseed)')
    expect(await comparePostgres(sa, url, 'wh', tables, 'a')).toEqual([])
    expect(await comparePostgres(sb, url, 'wh', tables, 'b')).toEqual([])
  })
})

describe('the process pool', () => {
  const mirrors: TempMirror[] = []
  afterAll(async () => {
    for (const m of mirrors) await m.dispose()
  })

  test('six accounts replicating at once use at most maxConnections connections to Postgres', { timeout: 120_000 }, async () => {
    const now = () => new Date().toISOString()
    const writeJobs = (m: TempMirror, from: number, n: number) =>
      new RecordWriter(m.sqlite, 'jobs').upsert(
        Array.from({ length: n }, (_, i) => ({
          id: `j${from + i}`,
          updated_at: now(),
          raw: '{}',
          columns: { job_number: `J-${from + i}`, job_status: 'scheduled', created_at: now() },
          children: [],
        })),
        { now: now(), replaceTies: true },
      )
    // A database of its own: the connections counted are this test's only.
    const db = await createDatabase(inject('postgresUrl'))
    const p = pool(3, db)
    const ds: [PostgresDestination, TempMirror][] = []
    for (let i = 0; i < 6; i++) {
      const m = await tempMirror()
      mirrors.push(m)
      writeJobs(m, 0, 20)
      ds.push([destination('pool', `acct${i}`, m, p), m])
    }
    let most = 0
    let sampling = true
    const counter = new pg.Client({ connectionString: db })
    await counter.connect()
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await counter.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'fsm-sync'`,
        )
        most = Math.max(most, rows[0]!.n)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      await counter.end()
    })()
    for (const [d] of ds) d.start()
    for (let round = 1; round <= 2; round++) {
      for (const [, m] of ds) writeJobs(m, round * 100, 10)
      for (const [d, m] of ds) await expect.poll(() => caughtUp(d, m.sqlite), { timeout: 30_000, interval: 20 }).toBe(true)
    }
    sampling = false
    await sampler
    for (const [d, m] of ds) expect(await comparePostgres(m.sqlite, db, 'pool', tables, d.accountId)).toEqual([])
    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(3)
    expect(p.size).toBeLessThanOrEqual(3)
  })

  test('a connection left idle for the idle timeout is closed: a quiet process holds none', { timeout: 60_000 }, async () => {
    const db = await createDatabase(inject('postgresUrl'))
    const clock = new FakeClock()
    const p = new DestinationPool({ url: db, limits, clock, maxConnections: 3 })
    cleanup.push(() => p.end())
    const open = async () =>
      (
        await pgQuery(
          db,
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'fsm-sync'`,
        )
      )[0]!.n as number
    const [a, b] = [await p.acquire(), await p.acquire()]
    await p.release(a)
    await p.release(b)
    expect([p.size, await open()]).toEqual([2, 2])
    await clock.advance(IDLE_TIMEOUT_MS - 1_000)
    expect(p.size).toBe(2)
    // Lent and given back: its idle time starts again; the other one times out.
    await p.release(await p.acquire())
    await clock.advance(2_000)
    expect(p.size).toBe(1)
    await clock.advance(IDLE_TIMEOUT_MS)
    expect(p.size).toBe(0)
    await expect.poll(open, { timeout: 10_000, interval: 50 }).toBe(0)
    // The pool opens a connection again when one is needed.
    const c = await p.acquire()
    expect((await c.client.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    await p.release(c)
    expect(p.size).toBe(1)
  })
})
