// An account moving between replicas (docs/sharding.md, Takeover from the warehouse), on the suite's
// Postgres server with real leases and real mirrors: the new owner's mirror replaces the recorded
// one under its higher epoch (a stale epoch is refused), the other accounts' rows untouched; the
// restore from the warehouse's copy, and its choice against the owner's own newer mirror.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import { acquireLeases, assertLease } from '../../../src/coordination/leases.js'
import type { ReplicaIdentity } from '../../../src/coordination/membership.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { restoreFromWarehouse } from '../../../src/destination/postgres-restore.js'
import { systemClock } from '../../../src/model/clock.js'
import type { RecordRow } from '../../../src/model/rows.js'
import { lastChangeSeq } from '../../../src/store/repositories/change-log-consumers.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import {
  PLAN_PROGRESS_MS,
  readSweepPlan,
  restoreMirror,
  writeSweepPlan,
  type SweepPlan,
} from '../../../src/store/repositories/takeover-state.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const at = (s: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + s * 1000).toISOString()
const job = (id: string, updated: number): RecordRow => ({
  id,
  updated_at: at(updated),
  raw: JSON.stringify({ id, updatedAt: at(updated), note: { b: 1, a: [true, null] } }),
  columns: { job_number: `J-${id}`, job_status: 'scheduled', created_at: at(0), total: 12.5 },
  children: [],
})

let url: string
let db: pg.Client
let t: CoordinationTables
const mirrors: TempMirror[] = []
const dests: PostgresDestination[] = []
const tables = destinationTables()
const logger = pino({ level: 'silent' })
const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })
const write = (m: TempMirror, rows: RecordRow[]) =>
  new RecordWriter(m.sqlite, 'jobs').upsert(rows, { now: new Date().toISOString(), replaceTies: true })
const cursorOf = (m: TempMirror, stream: string, cursor: unknown) =>
  m.sqlite
    .prepare(
      `INSERT INTO sync_state (stream, cursor, last_success_at, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (stream) DO UPDATE SET cursor = excluded.cursor`,
    )
    .run(stream, JSON.stringify(cursor), at(1), at(1))

async function mirror(): Promise<TempMirror> {
  const m = await tempMirror()
  mirrors.push(m)
  return m
}

/** A destination of `accountId` from mirror `m`; with `lease`, fenced by it and writing under its epoch. */
function destination(m: TempMirror, accountId: string, lease?: { owner: ReplicaIdentity; epoch: number; fenced?: boolean }) {
  const d = new PostgresDestination({
    url,
    schema: 'wh',
    accountId,
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables,
    logger,
    clock: systemClock,
    // Every batch compares every table: the sync state goes with each batch that drains the mirror.
    snapshotCheckMs: 0,
    ...(lease === undefined
      ? {}
      : {
          epoch: lease.epoch,
          ...(lease.fenced === false ? {} : { fence: (c: pg.ClientBase) => assertLease(c, t, accountId, lease.owner.name, lease.epoch) }),
        }),
  })
  dests.push(d)
  return d
}

/** `to` takes the account over from whoever held it (the lease made to lapse first). */
async function takeOver(accountId: string, to: ReplicaIdentity): Promise<number> {
  await db.query(`UPDATE ${t.leases} SET expires_at = now() WHERE account_id = $1`, [accountId])
  const [lease] = await acquireLeases(db, t, to, [accountId], 60_000)
  return lease!.epoch
}

const stateRow = async (accountId: string) =>
  (await pgQuery(url, `SELECT seq, mirror_id, mirror_epoch FROM wh._fsm_sync_state WHERE account_id = $1`, [accountId]))[0]

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'))
  db = new pg.Client({ connectionString: url })
  await db.connect()
  t = await ensureCoordinationSchema(db)
})

afterAll(async () => {
  for (const d of dests) await d.stop().catch(() => undefined)
  await db?.end()
  for (const m of mirrors) await m.dispose()
})

describe('an account handed over between replicas', () => {
  test("the new owner's mirror replaces the recorded one under its higher epoch; the warehouse follows it; a stale epoch is refused", async () => {
    const [a, b] = [replica('a'), replica('b')]
    const [ma, mb, mo] = [await mirror(), await mirror(), await mirror()]
    // Another account beside it, which the handover must not touch.
    write(mo, [job('o1', 1), job('o2', 2)])
    await destination(mo, 'bystander').catchUp()
    const bystander = await pgQuery(url, `SELECT * FROM wh.jobs WHERE account_id = 'bystander' ORDER BY id`)

    const [lease] = await acquireLeases(db, t, a, ['moving'], 60_000)
    write(ma, [job('j1', 1), job('j2', 2)])
    await destination(ma, 'moving', { owner: a, epoch: lease!.epoch }).catchUp()
    expect(await stateRow('moving')).toMatchObject({ mirror_epoch: String(lease!.epoch) })

    // b owns it now, with a mirror of its own (built by its sweeps): the warehouse becomes that mirror's.
    const epoch = await takeOver('moving', b)
    write(mb, [job('j2', 3), job('j3', 4)])
    const db2 = destination(mb, 'moving', { owner: b, epoch })
    const first = await db2.catchUp()
    expect(first.loaded).toContain('new owner')
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'moving')).toEqual([])
    // And follows its changes afterwards, without another load.
    write(mb, [job('j4', 5)])
    const next = await db2.catchUp()
    expect(next.loaded).toBeNull()
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'moving')).toEqual([])
    expect(await stateRow('moving')).toMatchObject({ mirror_epoch: String(epoch) })

    // a's mirror under its old epoch: refused by the identity check even without the fence.
    write(ma, [job('j9', 9)])
    await expect(destination(ma, 'moving', { owner: a, epoch: lease!.epoch, fenced: false }).catchUp()).rejects.toThrow(
      /replica of another mirror/,
    )
    // And without sharding (no epoch), another mirror is refused as before.
    await expect(destination(ma, 'moving').catchUp()).rejects.toThrow(/replica of another mirror/)
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'moving')).toEqual([])
    expect(await pgQuery(url, `SELECT * FROM wh.jobs WHERE account_id = 'bystander' ORDER BY id`)).toEqual(bystander)
  })

  test("a new owner restores its mirror from the warehouse's copy and the replica goes on from the copy's cursor", async () => {
    const [a, b] = [replica('ra'), replica('rb')]
    const [ma, mb] = [await mirror(), await mirror()]
    const [lease] = await acquireLeases(db, t, a, ['restored'], 60_000)
    write(ma, [job('j1', 1), job('j2', 2), job('j3', 3)])
    cursorOf(ma, 'jobs', { updatedAt: at(3), id: 'j3' })
    await destination(ma, 'restored', { owner: a, epoch: lease!.epoch }).catchUp()

    const epoch = await takeOver('restored', b)
    const fence = (c: pg.ClientBase) => assertLease(c, t, 'restored', b.name, epoch)
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    const r = await restoreFromWarehouse({
      client,
      schema: 'wh',
      accountId: 'restored',
      mirror: mb.sqlite,
      tables,
      fence,
      epoch,
      now: () => new Date().toISOString(),
    }).finally(() => client.end())
    expect(r).toMatchObject({ source: 'warehouse', adopted: true, seq: lastChangeSeq(ma.sqlite) })
    // The mirror holds the copy: rows, change_log with its seqs, the cursors.
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'restored')).toEqual([])
    expect(lastChangeSeq(mb.sqlite)).toBe(lastChangeSeq(ma.sqlite))
    expect(mb.sqlite.prepare(`SELECT cursor FROM sync_state WHERE stream = 'jobs'`).pluck().get()).toBe(
      JSON.stringify({ updatedAt: at(3), id: 'j3' }),
    )
    // The destination follows it from there without a load; new changes are numbered after the copy's.
    write(mb, [job('j4', 4)])
    const d = destination(mb, 'restored', { owner: b, epoch })
    const s = await d.catchUp()
    expect(s.loaded).toBeNull()
    expect(s.changesApplied).toBe(1)
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'restored')).toEqual([])
  })

  test('the sync state goes to the warehouse with the rows when a cursor moved, not after each idle sweep', async () => {
    const m = await mirror()
    write(m, [job('j1', 1)])
    cursorOf(m, 'jobs', { updatedAt: at(1), id: 'j1' })
    const d = destination(m, 'state')
    await d.catchUp()
    const synced = async () =>
      JSON.parse(
        ((await pgQuery(url, `SELECT sync_state FROM wh._fsm_sync_state WHERE account_id = 'state'`))[0] as { sync_state: string })
          .sync_state,
      ) as { streams: [string, string | null, string | null][]; highWater: string }
    expect(await synced()).toMatchObject({ streams: [['jobs', JSON.stringify({ updatedAt: at(1), id: 'j1' }), at(1)]], highWater: at(1) })
    // A sweep that found nothing new: only its last success moved. Nothing is written for it.
    m.sqlite.prepare(`UPDATE sync_state SET last_success_at = ? WHERE stream = 'jobs'`).run(at(50))
    expect((await d.catchUp()).changesApplied).toBe(0)
    expect((await synced()).streams[0]![2]).toBe(at(1))
    // The cursor moved (a page with no change the mirror did not have): written, with the last success.
    cursorOf(m, 'jobs', { updatedAt: at(60), id: 'j9' })
    await d.catchUp()
    expect((await synced()).streams[0]).toEqual(['jobs', JSON.stringify({ updatedAt: at(60), id: 'j9' }), at(50)])
    // The sweeps' plan goes too, but only once its time moved by a step (PLAN_PROGRESS_MS), not after every sweep.
    const planAt = (ms: number): SweepPlan => ({
      writtenAt: new Date(ms).toISOString(),
      discoveredAt: null,
      streams: [['jobs', new Date(ms - 1_000).toISOString(), 60_000, 0, null]],
    })
    const planned = async () => {
      const text = (await pgQuery<{ sync_state: string }>(url, `SELECT sync_state FROM wh._fsm_sync_state WHERE account_id = 'state'`))[0]!
        .sync_state
      return (JSON.parse(JSON.parse(text).plan as string) as SweepPlan).writtenAt
    }
    const step = Math.ceil(Date.now() / PLAN_PROGRESS_MS) * PLAN_PROGRESS_MS
    writeSweepPlan(m.sqlite, planAt(step + 1_000))
    await d.catchUp()
    expect(await planned()).toBe(planAt(step + 1_000).writtenAt)
    writeSweepPlan(m.sqlite, planAt(step + 2_000))
    await d.catchUp()
    expect(await planned()).toBe(planAt(step + 1_000).writtenAt)
    writeSweepPlan(m.sqlite, planAt(step + PLAN_PROGRESS_MS))
    await d.catchUp()
    expect(await planned()).toBe(planAt(step + PLAN_PROGRESS_MS).writtenAt)
    // A restore puts it back, with the receipt of the oldest delivery not applied (none here).
    const text = (await pgQuery<{ sync_state: string }>(url, `SELECT sync_state FROM wh._fsm_sync_state WHERE account_id = 'state'`))[0]!
      .sync_state
    const other = await mirror()
    restoreMirror(other.sqlite, { tables: [], state: JSON.parse(text), lastSeq: 0, now: new Date().toISOString() })
    expect(readSweepPlan(other.sqlite)).toEqual(planAt(step + PLAN_PROGRESS_MS))
  })

  test('an owner whose own mirror is newer keeps it, and the warehouse is loaded from it; with no copy it backfills', async () => {
    const [a, b] = [replica('na'), replica('nb')]
    const [ma, mb] = [await mirror(), await mirror()]
    const [lease] = await acquireLeases(db, t, a, ['newer'], 60_000)
    // b owned it before and has seen a later change than the warehouse's copy (a's) holds.
    write(ma, [job('j1', 1), job('j2', 2)])
    cursorOf(ma, 'jobs', { updatedAt: at(2), id: 'j2' })
    await destination(ma, 'newer', { owner: a, epoch: lease!.epoch }).catchUp()
    write(mb, [job('j1', 1), job('j2', 2), job('j3', 30)])
    cursorOf(mb, 'jobs', { updatedAt: at(30), id: 'j3' })

    const epoch = await takeOver('newer', b)
    const restore = async (m: TempMirror, accountId: string, e: number) => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      return restoreFromWarehouse({
        client,
        schema: 'wh',
        accountId,
        mirror: m.sqlite,
        tables,
        fence: (c) => assertLease(c, t, accountId, b.name, e),
        epoch: e,
        now: () => new Date().toISOString(),
      }).finally(() => client.end())
    }
    const before = mb.sqlite.prepare(`SELECT id, updated_at FROM jobs ORDER BY id`).all()
    expect(await restore(mb, 'newer', epoch)).toMatchObject({ source: 'own-mirror', reason: expect.stringContaining('newer') })
    expect(mb.sqlite.prepare(`SELECT id, updated_at FROM jobs ORDER BY id`).all()).toEqual(before)
    // Its destination replaces the warehouse's copy with it (the higher epoch).
    expect((await destination(mb, 'newer', { owner: b, epoch }).catchUp()).loaded).toContain('new owner')
    expect(await comparePostgres(mb.sqlite, url, 'wh', tables, 'newer')).toEqual([])

    // An account the warehouse holds no copy of: nothing restored, the sweeps backfill it.
    const [none] = await acquireLeases(db, t, b, ['absent'], 60_000)
    const mc = await mirror()
    expect(await restore(mc, 'absent', none!.epoch)).toMatchObject({ source: 'none' })
    expect(mc.sqlite.prepare(`SELECT count(*) FROM jobs`).pluck().get()).toBe(0)
  })
})
