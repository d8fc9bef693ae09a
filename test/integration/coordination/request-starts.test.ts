// The old owner's request starts, recorded with its heartbeats and read by the new owner at takeover,
// against the suite's real Postgres server: ages survive the trip, a replica that lost the lease
// cannot overwrite the new owner's record, and a thousand accounts take one statement.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { ensureCoordinationSchema, type CoordinationTables } from '../../../src/coordination/coordination-schema.js'
import { acquireLeases, releaseLeases } from '../../../src/coordination/leases.js'
import type { ReplicaIdentity } from '../../../src/coordination/membership.js'
import { readPriorStarts, recordStarts } from '../../../src/coordination/request-starts.js'
import { createDatabase } from '../../support/postgres-server.js'

let db: pg.Client
let schemas = 0
const replica = (name: string): ReplicaIdentity => ({ name, incarnation: randomUUID() })

beforeAll(async () => {
  db = new pg.Client({ connectionString: await createDatabase(inject('postgresUrl'), 'fsm_coord_starts') })
  await db.connect()
})

afterAll(async () => {
  await db.end()
})

const fresh = (): Promise<CoordinationTables> => ensureCoordinationSchema(db, `starts_${schemas++}`)

describe('request starts across a handover', () => {
  test('the new owner reads the recorded starts as ages, at least as old as written', async () => {
    const t = await fresh()
    const a = replica('a')
    await acquireLeases(db, t, a, ['x'], 10_000)
    expect(await recordStarts(db, t, a, [{ accountId: 'x', epoch: 1, agesMs: [70_000, 30_000, 500, 10_000] }])).toEqual(['x'])
    const prior = (await readPriorStarts(db, t, ['x', 'never'], 60_000)).get('x')
    // Older than the window is left out; the rest come back oldest first, aged by the time since.
    expect(prior!.agesMs).toHaveLength(3)
    const [oldest, middle, newest] = prior!.agesMs as [number, number, number]
    expect(oldest).toBeGreaterThanOrEqual(30_000)
    expect(middle - 10_000).toBe(newest - 500)
    expect(oldest - 30_000).toBe(newest - 500)
    expect(prior).toMatchObject({ epoch: 1, final: false })
    expect(prior!.sinceRecordMs).toBeGreaterThanOrEqual(0)
    expect((await readPriorStarts(db, t, ['x', 'never'], 60_000)).has('never')).toBe(false)
  })

  test('a replica that lost the lease cannot overwrite the new owner; the last record before a release is final', async () => {
    const t = await fresh()
    const [a, b] = [replica('a'), replica('b')]
    await acquireLeases(db, t, a, ['x'], 10_000)
    expect(await recordStarts(db, t, a, [{ accountId: 'x', epoch: 1, agesMs: [1_000] }], true)).toEqual(['x'])
    await releaseLeases(db, t, a)
    expect((await readPriorStarts(db, t, ['x'], 60_000)).get('x')).toMatchObject({ epoch: 1, final: true })
    await acquireLeases(db, t, b, ['x'], 10_000)
    expect(await recordStarts(db, t, b, [{ accountId: 'x', epoch: 2, agesMs: [] }])).toEqual(['x'])
    // The old owner, back from a pause, writes its stale record: refused.
    expect(await recordStarts(db, t, a, [{ accountId: 'x', epoch: 1, agesMs: [1, 2, 3] }])).toEqual([])
    expect((await readPriorStarts(db, t, ['x'], 60_000)).get('x')).toMatchObject({ epoch: 2, agesMs: [], final: false })
  })

  test("1,000 accounts' starts are written in one statement", async () => {
    const t = await fresh()
    const a = replica('a')
    const accounts = Array.from({ length: 1_000 }, (_, i) => `acct-${i}`)
    await acquireLeases(db, t, a, accounts, 10_000)
    let statements = 0
    const counted = {
      query: ((...args: Parameters<pg.Client['query']>) => {
        statements++
        return (db.query as (...x: unknown[]) => unknown)(...args)
      }) as pg.Client['query'],
    }
    const records = accounts.map((accountId) => ({ accountId, epoch: 1, agesMs: Array.from({ length: 60 }, (_, i) => i * 1_000) }))
    expect(await recordStarts(counted, t, a, records)).toHaveLength(1_000)
    expect(statements).toBe(1)
    expect((await readPriorStarts(db, t, accounts, 60_000)).get('acct-999')!.agesMs).toHaveLength(60)
  })
})
