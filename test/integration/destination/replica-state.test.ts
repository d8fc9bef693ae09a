// The replica's state and the destination's registration against a real server and real mirrors:
// the mirror a replica belongs to, two first runs at once, what a destination never loaded holds,
// and waits on Postgres (a lock an analyst holds, a server that stops answering).
import { afterAll, beforeAll, describe, expect, inject, test, vi } from 'vitest'
import pg from 'pg'
import pino from 'pino'
import { Registry } from 'prom-client'
import { registerDestinationMetrics } from '../../../src/daemon/destination-metrics.js'
import { systemClock } from '../../../src/model/clock.js'
import { PostgresDestination, type PostgresDestinationOptions } from '../../../src/destination/postgres-destination.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { ChangeLogConsumers, pruneHorizon } from '../../../src/store/repositories/change-log-consumers.js'
import { mirrorId } from '../../../src/store/repositories/mirror-identity.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { freePort } from '../../support/free-port.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const logger = pino({ level: 'silent' })
let tables: TableSpec[]
let url: string
let a: TempMirror
let b: TempMirror
const dests: PostgresDestination[] = []

function destination(m: TempMirror, schema: string, options: Partial<PostgresDestinationOptions> = {}): PostgresDestination {
  const d = new PostgresDestination({
    url,
    schema,
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables,
    logger,
    clock: systemClock,
    retry: { minMs: 20, maxMs: 200 },
    pollMs: 20,
    ...options,
  })
  dests.push(d)
  return d
}

function writeJobs(m: TempMirror, prefix: string, n: number): void {
  const now = new Date().toISOString()
  new RecordWriter(m.sqlite, 'jobs').upsert(
    Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, updated_at: now, raw: '{}', columns: { job_status: prefix } })),
    { now, replaceTies: true },
  )
}

beforeAll(async () => {
  tables = destinationTables().filter((t) => ['jobs', 'job_assignees', 'change_log'].includes(t.name))
  url = await createDatabase(inject('postgresUrl'))
  a = await tempMirror()
  b = await tempMirror()
})

afterAll(async () => {
  for (const d of dests) await d.close()
  await a.dispose()
  await b.dispose()
})

describe("the replica's state", () => {
  test('each mirror has its own identity; a replica fed by another mirror is refused with the fix, and --reseed takes it over', async () => {
    expect(mirrorId(a.sqlite)).toMatch(/^[0-9a-f]{32}$/)
    expect(mirrorId(a.sqlite)).not.toBe(mirrorId(b.sqlite))
    writeJobs(a, 'a', 5)
    writeJobs(b, 'b', 9)
    await destination(a, 'one').catchUp()
    expect(await pgQuery(url, `SELECT mirror_id FROM one._fsm_sync_state`)).toEqual([{ mirror_id: mirrorId(a.sqlite) }])

    // Mirror B is further along (9 changes against 5): its changes would be applied on top of A's rows.
    const other = destination(b, 'one')
    await expect(other.catchUp()).rejects.toThrow(
      /schema one on 127\.0\.0\.1:\d+\/\w+ is the replica of another mirror .*FSM_POSTGRES_SCHEMA to another schema, or .*fsm-sync replicate --reseed/,
    )
    expect(await pgQuery(url, `SELECT count(*)::int AS n FROM one.jobs WHERE id LIKE 'b%'`)).toEqual([{ n: 0 }])

    // A daemon of A following while B takes the replica over stops at its next batch instead of merging.
    const follower = destination(a, 'one')
    follower.start()
    await expect.poll(() => follower.status().state, { timeout: 10_000, interval: 20 }).toBe('following')
    expect((await other.catchUp({ reseed: true })).loaded).toBe('asked for (--reseed)')
    writeJobs(a, 'late', 1)
    await expect.poll(() => follower.status().lastError, { timeout: 10_000, interval: 20 }).toMatch(/replica of another mirror/)
    await follower.stop()
    expect(await comparePostgres(b.sqlite, url, 'one', tables)).toEqual([])

    // A replica from before the identity was recorded adopts the first mirror that feeds it.
    await destination(a, 'two').catchUp()
    await pgQuery(url, `UPDATE two._fsm_sync_state SET mirror_id = NULL`)
    writeJobs(a, 'more', 2)
    expect((await destination(a, 'two').catchUp()).loaded).toBeNull()
    expect(await pgQuery(url, `SELECT mirror_id FROM two._fsm_sync_state`)).toEqual([{ mirror_id: mirrorId(a.sqlite) }])
    await expect(destination(b, 'two').catchUp()).rejects.toThrow(/replica of another mirror/)
  })

  test('two first runs at once on one schema: one creates and loads it, the other waits for it and applies nothing twice', async () => {
    for (const schema of ['race1', 'race2', 'race3']) {
      const [x, y] = await Promise.all([destination(a, schema).catchUp(), destination(a, schema).catchUp()])
      expect([x.loaded, y.loaded].filter((l) => l !== null)).toEqual(['a new destination'])
      expect(await comparePostgres(a.sqlite, url, schema, tables)).toEqual([])
    }
  })

  test('a destination never loaded holds nothing back: replicate leaves no row, a daemon one that holds nothing', async () => {
    const consumers = new ChangeLogConsumers(a.sqlite)
    const before = consumers.list().map((c) => c.name)
    const port = await freePort()
    const wrongPort = `postgres://fsm:secret@127.0.0.1:${port}/warehouse`
    const once = destination(a, 'fsm', { url: wrongPort })
    await expect(once.catchUp()).rejects.toThrow(/connection refused/)
    expect(consumers.list().map((c) => c.name)).toEqual(before)

    // The daemon's destination records its error for `status`, in a row that holds no change back.
    const daemon = destination(a, 'fsm', { url: wrongPort })
    daemon.start()
    await expect.poll(() => consumers.get(daemon.consumerName)?.lastError, { timeout: 10_000, interval: 20 }).toMatch(/connection refused/)
    await daemon.stop()
    expect(consumers.get(daemon.consumerName)).toMatchObject({ kind: 'destination', loadedAt: null, target: `127.0.0.1:${port}/warehouse` })
    for (const name of before) consumers.remove(name)
    const settings = { changeLogDays: 1, changeLogHoldDays: 'off' } as const
    const last = a.sqlite.prepare(`SELECT max(seq) FROM change_log`).pluck().get() as number
    expect(pruneHorizon(a.sqlite, Date.now() + 3 * 86_400_000, settings)).toBe(last)

    // Once loaded, a destination holds what it has not read.
    const loaded = destination(a, 'held')
    const { cursor } = await loaded.catchUp()
    expect(consumers.get(loaded.consumerName)).toMatchObject({ seq: cursor, loadedAt: expect.any(String), schema: 'held' })
    writeJobs(a, 'after', 3)
    expect(pruneHorizon(a.sqlite, Date.now() + 3 * 86_400_000, settings)).toBe(cursor)
  })
})

describe('waits on Postgres', () => {
  test("an analyst's open transaction: the wait is reported with who holds the lock, bounded by the lock timeout, and the mirror's WAL is not pinned", async () => {
    const d = destination(a, 'waits', { limits: { lockTimeoutMs: 2_000, statementTimeoutMs: 60_000 }, waitReportMs: 300 })
    await d.catchUp()
    const analyst = new pg.Client({ connectionString: url, application_name: 'analyst-psql' })
    await analyst.connect()
    try {
      await analyst.query('BEGIN')
      // A read alone no longer holds a load up (it deletes the account's rows, no TRUNCATE): a row lock does.
      await analyst.query('SELECT count(*) FROM waits.jobs')
      await analyst.query('SELECT id FROM waits.jobs ORDER BY id LIMIT 1 FOR UPDATE')
      const pid = (await analyst.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid
      const reseed = d.catchUp({ reseed: true })
      reseed.catch(() => undefined)
      await expect.poll(() => d.status().state, { timeout: 10_000, interval: 20 }).toBe('waiting')
      const registry = new Registry()
      registerDestinationMetrics(registry, () => d.status())
      expect(await registry.metrics()).toMatch(/fsm_destination_up\{destination="postgres"\} 0/)
      expect(d.status().lastError).toMatch(
        new RegExp(`waiting \\d+ s for a lock held by pid ${pid} \\(user postgres, application analyst-psql`),
      )
      expect(new ChangeLogConsumers(a.sqlite).get(d.consumerName)?.lastError).toMatch(/held by pid \d+ .*idle in transaction/)
      // Meanwhile the mirror takes writes and checkpoints them whole: the load holds no read snapshot while it waits.
      writeJobs(a, 'wal', 50)
      const [checkpoint] = a.sqlite.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number }[]
      expect(checkpoint).toEqual(expect.objectContaining({ busy: 0, log: 0 }))
      await expect(reseed).rejects.toThrow(
        new RegExp(
          `lock timeout \\(destination\\.postgres\\.lockTimeoutSeconds\\).*before that: waiting \\d+ s for a lock held by pid ${pid}`,
        ),
      )
    } finally {
      await analyst.end()
    }
    expect((await d.catchUp({ reseed: true })).loaded).toBe('asked for (--reseed)')
    expect(await comparePostgres(a.sqlite, url, 'waits', tables)).toEqual([])
  })

  test('a backend that stops answering: reported, then its connection is cut past the statement timeout, and the follower goes on', async () => {
    // Only this test's follower is connected: its backend is the one to freeze.
    for (const other of dests) await other.close()
    const d = destination(a, 'frozen', { limits: { lockTimeoutMs: 1_000, statementTimeoutMs: 1_000 }, waitReportMs: 300 })
    await d.catchUp()
    d.start()
    await expect.poll(() => d.status().state, { timeout: 10_000, interval: 20 }).toBe('following')
    const [backend] = await pgQuery<{ pid: number }>(
      url,
      `SELECT pid FROM pg_stat_activity WHERE application_name = 'fsm-sync' AND datname = current_database() AND query NOT LIKE '%pg_stat_activity%'`,
    )
    process.kill(backend!.pid, 'SIGSTOP')
    try {
      writeJobs(a, 'frozen', 2)
      await expect.poll(() => d.status().state, { timeout: 10_000, interval: 20 }).toBe('waiting')
      expect(d.status().lastError).toMatch(/Postgres has not answered for \d+ s/)
      await expect.poll(() => d.status().errors, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0)
    } finally {
      process.kill(backend!.pid, 'SIGCONT')
    }
    await expect.poll(() => d.status().lagChanges, { timeout: 10_000, interval: 20 }).toBe(0)
    await d.stop()
    await vi.waitFor(async () => expect(await comparePostgres(a.sqlite, url, 'frozen', tables)).toEqual([]))
  })
})
