// The destination's commits fenced by the account's lease (docs/sharding.md, Wiring): the real
// assertLease from src/coordination as the `fence` hook, on the suite's Postgres server. Once
// another replica takes the lease, nothing more is committed (rows and cursor stay as they were),
// the transaction rolls back and the destination stops, without a retry loop.
import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import pg from 'pg'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import { acquireLeases, assertLease } from '../../../src/coordination/leases.js'
import type { ReplicaIdentity } from '../../../src/coordination/membership.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { PostgresDestination } from '../../../src/destination/postgres-destination.js'
import { systemClock } from '../../../src/model/clock.js'
import type { TableSpec } from '../../../src/model/table-spec.js'
import { lastChangeSeq } from '../../../src/store/repositories/change-log-consumers.js'
import type { RecordRow } from '../../../src/model/rows.js'
import { RecordWriter } from '../../../src/store/repositories/record-writer.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const at = (s: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + s * 1000).toISOString()
const job = (id: string, updated: number): RecordRow => ({
  id,
  updated_at: at(updated),
  raw: JSON.stringify({ id, updatedAt: at(updated) }),
  columns: { job_number: `J-${id}`, job_status: 'scheduled', created_at: at(0) },
  children: [],
})

let url: string
let db: pg.Client
let t: CoordinationTables
let m: TempMirror
let tables: TableSpec[]
const dests: PostgresDestination[] = []
const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })
const write = (rows: RecordRow[]) => new RecordWriter(m.sqlite, 'jobs').upsert(rows, { now: new Date().toISOString(), replaceTies: true })

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await new Promise((r) => systemClock.setTimer(20, () => r(undefined)))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** A destination of `accountId` fenced by `owner`'s lease at `epoch`; its log lines and refusals are counted. */
function fencedDestination(accountId: string, owner: ReplicaIdentity, epoch: number) {
  const lines: string[] = []
  const refusals: unknown[] = []
  const logger = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }))
  const d = new PostgresDestination({
    url,
    schema: 'wh',
    accountId,
    mirrorPath: m.path,
    mirror: m.sqlite,
    tables,
    logger,
    clock: systemClock,
    batchSize: 5,
    pollMs: 20,
    retry: { minMs: 20, maxMs: 200 },
    fence: (client) =>
      assertLease(client, t, accountId, owner.name, epoch).catch((err: unknown) => {
        refusals.push(err)
        throw err
      }),
  })
  dests.push(d)
  return { d, lines, refusals }
}

const warehouse = async (accountId: string) => ({
  rows: await pgQuery(url, `SELECT id, updated_at FROM wh.jobs WHERE account_id = $1 ORDER BY id`, [accountId]),
  state: await pgQuery(url, `SELECT seq, updated_at FROM wh._fsm_sync_state WHERE account_id = $1`, [accountId]),
})

beforeAll(async () => {
  url = await createDatabase(inject('postgresUrl'))
  db = new pg.Client({ connectionString: url })
  await db.connect()
  t = await ensureCoordinationSchema(db)
  m = await tempMirror()
  tables = destinationTables().filter((x) => ['jobs', 'job_assignees', 'change_log'].includes(x.name))
})

afterAll(async () => {
  for (const d of dests) await d.stop()
  await db?.end()
  await m?.dispose()
})

describe('warehouse commits fenced by the lease', () => {
  test('a takeover between two batches: the old owner commits nothing after it and stops, without retrying', async () => {
    const [a, b] = [replica('a'), replica('b')]
    const [lease] = await acquireLeases(db, t, a, ['acct'], 60_000)
    write(Array.from({ length: 12 }, (_, i) => job(`j${i}`, i)))
    const { d, lines, refusals } = fencedDestination('acct', a, lease!.epoch)
    d.start()
    await until(() => d.status().cursor === lastChangeSeq(m.sqlite), 'the first catch-up')
    const before = await warehouse('acct')
    expect(before.rows).toHaveLength(12)

    // The lease lapses and replica b takes it (epoch 2) before the next batch.
    await db.query(`UPDATE ${t.leases} SET expires_at = now() WHERE account_id = 'acct'`)
    const [taken] = await acquireLeases(db, t, b, ['acct'], 60_000)
    expect(taken!.epoch).toBe(lease!.epoch + 1)
    write([job('j0', 100), job('late', 101)])
    await until(() => d.status().state === 'stopped', 'the destination to stop')

    expect(await warehouse('acct')).toEqual(before)
    expect(refusals).toHaveLength(1)
    expect(lines.filter((l) => l.includes('no longer owns the account'))).toHaveLength(1)
    // No retry loop: a few poll intervals later, still one refusal and nothing written.
    await new Promise((r) => systemClock.setTimer(300, () => r(undefined)))
    expect(refusals).toHaveLength(1)
    expect(await warehouse('acct')).toEqual(before)
  })

  test('the initial load of an account another replica owns writes nothing', async () => {
    const [a, b] = [replica('a2'), replica('b2')]
    await acquireLeases(db, t, b, ['other'], 60_000)
    const { d, refusals } = fencedDestination('other', a, 1)
    d.start()
    await until(() => d.status().state === 'stopped', 'the destination to stop')
    expect(refusals).toHaveLength(1)
    expect(await warehouse('other')).toEqual({ rows: [], state: [] })
  })

  test("a state row from before mirror identities is not claimed for this mirror once the lease is another's", async () => {
    const [a, b] = [replica('a3'), replica('b3')]
    const [lease] = await acquireLeases(db, t, a, ['legacy'], 60_000)
    const first = fencedDestination('legacy', a, lease!.epoch)
    first.d.start()
    await until(() => first.d.status().cursor === lastChangeSeq(m.sqlite), 'the first catch-up')
    await first.d.stop()
    // As an older release left it: no mirror identity; then another replica takes the account.
    await pgQuery(url, `UPDATE wh._fsm_sync_state SET mirror_id = NULL WHERE account_id = 'legacy'`)
    await db.query(`UPDATE ${t.leases} SET expires_at = now() WHERE account_id = 'legacy'`)
    await acquireLeases(db, t, b, ['legacy'], 60_000)
    const before = await warehouse('legacy')
    const again = fencedDestination('legacy', a, lease!.epoch)
    again.d.start()
    await until(() => again.d.status().state === 'stopped', 'the destination to stop')
    expect(again.refusals).toHaveLength(1)
    expect(await pgQuery(url, `SELECT mirror_id FROM wh._fsm_sync_state WHERE account_id = 'legacy'`)).toEqual([{ mirror_id: null }])
    expect(await warehouse('legacy')).toEqual(before)
  })
})
