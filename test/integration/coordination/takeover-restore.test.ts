// A takeover without re-reading the account (docs/sharding.md, Takeover from the warehouse): `fsm-sync
// run` replicas as child processes over the multi-account emulator and the suite's Postgres server.
// r1 syncs the accounts and is SIGKILLed; r2, with an empty data folder, restores each mirror from
// the warehouse and spends a few requests per account (the emulator's request log) instead of
// re-reading it; after its first sweep and the reconciliation that follows, every mirror equals its
// account (a change and a soft delete made while nobody owned it included) and the warehouse its mirror.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import type { AccountHandle } from '../../../emulator/index.js'
import pg from 'pg'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { secretsPathFor, writeSecretsFile } from '../../../src/store/repositories/secrets-file.js'
import { sign } from '../../../src/webhooks/signature.js'
import { keyVariable } from '../../support/accounts-env.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { query, until, type Running } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { idleSchedules } from '../../support/schedules.js'
import { tempDir } from '../../support/temp-mirror.js'
import { baseUrl, startReplica } from './replicas-env.js'

const ACCOUNTS = 3
const ROWS = 600
const LEASE_SECONDS = 3
const SIGNING_SECRET = 'whsec_takeover_0123456789abcdef0123'

let emu: EmulatorEnv
let url: string
let file: string
const dirs = new Map<string, string>()
const running = new Map<string, Running>()
const mirrorOf = (replica: string, id: string) => path.join(dirs.get(replica)!, id, 'mirror.db')

function start(name: string, config = file): Running {
  const dir = tempDir()
  dirs.set(name, dir)
  // As `webhooks register` leaves a replica's folder: it verifies the accounts' deliveries.
  for (const a of emu.accounts) {
    mkdirSync(path.join(dir, a.id), { recursive: true })
    const createdAt = '2026-11-01T00:00:00.000Z'
    writeSecretsFile(secretsPathFor(path.join(dir, a.id, 'mirror.db')), [
      { endpointId: 'ep-t', url: 'http://127.0.0.1/webhooks', secret: SIGNING_SECRET, createdAt, supersededAt: null },
    ])
  }
  const run = startReplica({ name, config, baseUrl: emu.url, dataDir: dir, accounts: emu.accounts })
  running.set(name, run)
  return run
}

const api = async (a: AccountHandle, method: 'PUT' | 'DELETE', p: string, body?: unknown) => {
  const res = await request(`${emu.url}${p}`, {
    method,
    headers: { 'x-api-key': a.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  await res.body.dump()
  expect(res.statusCode, `${method} ${p}`).toBeLessThan(300)
}

/** A JSON value with every object's keys in one order: the warehouse's jsonb (a restore's source) keeps the values, not the order. */
const sorted = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(sorted)
    : v !== null && typeof v === 'object'
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
        )
      : v

/** The mirror against the account's own records (compare-mirror.ts), raw payloads as JSON values; empty when exact. */
async function mismatches(a: AccountHandle, db: string): Promise<string[]> {
  if (!existsSync(db)) return ['no mirror yet']
  const conn = new Database(db, { readonly: true, fileMustExist: true })
  try {
    const state = async (resource: string) =>
      (await a.control<Record<string, unknown>[]>('GET', `/state/${resource}`)).map((r) => sorted(r) as Record<string, unknown>)
    const rows = (sql: string, ...params: unknown[]) =>
      (conn.prepare(sql).all(...params) as Record<string, unknown>[]).map((r) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^[[{]/.test(v) ? JSON.stringify(sorted(JSON.parse(v))) : v]),
        ),
      )
    return (await compareMirror(state, rows, [])).mismatches.map((m) => `${m.stream} ${m.id} ${m.problem}: ${m.detail}`)
  } finally {
    conn.close()
  }
}

/** The warehouse against the mirror, every replicated table; empty when exact. */
async function warehouseDiffs(id: string, db: string, warehouse = url): Promise<string[]> {
  const conn = new Database(db, { readonly: true, fileMustExist: true })
  try {
    return await comparePostgres(conn, warehouse, 'fsm', destinationTables(), id)
  } finally {
    conn.close()
  }
}

beforeAll(async () => {
  emu = await emulatorEnv({ accounts: ACCOUNTS, rows: ROWS })
  url = await createDatabase(inject('postgresUrl'), 'fsm_takeover')
  file = path.join(tempDir(), 'config.json')
  writeFileSync(
    file,
    JSON.stringify({
      rateLimit: 100_000,
      // No schedule fires by itself: what runs is the start's sweep and reference read, and the takeover's reconciliation.
      schedules: idleSchedules(),
      destination: { postgres: { url } },
      sharding: { enabled: 'on', leaseSeconds: LEASE_SECONDS },
      accounts: emu.accounts.map((a) => ({ id: a.id, apiKeyEnv: keyVariable(a) })),
    }),
  )
}, 60_000)

afterAll(async () => {
  for (const r of running.values()) r.child.kill('SIGKILL')
  await Promise.all([...running.values()].map((r) => r.exited))
  await emu.close()
})

describe('a takeover from the warehouse', () => {
  test('r2 restores each account r1 synced, spends a few requests on it, and ends exact after its first sweep and reconciliation', async () => {
    const r1 = start('r1')
    // Each account synced by r1 and its cursors in the warehouse with rows that cover them.
    for (const a of emu.accounts) {
      let last: string[] = []
      await until(`${a.id} synced by r1`, async () => (last = await mismatches(a, mirrorOf('r1', a.id))).length === 0, 90_000).catch(
        (err: unknown) => {
          throw new Error(`${(err as Error).message}: ${last.slice(0, 5).join('; ')}`)
        },
      )
      await until(
        `${a.id} replicated with its sync state`,
        async () => {
          const seq = query(mirrorOf('r1', a.id), 'SELECT max(seq) AS seq FROM change_log')[0]?.seq
          const row = await pgQuery<{ seq: string; sync_state: string | null }>(
            url,
            `SELECT seq, sync_state FROM fsm._fsm_sync_state WHERE account_id = $1`,
            [a.id],
          ).catch(() => [])
          return row[0]?.sync_state != null && Number(row[0].seq) === seq
        },
        30_000,
      )
    }
    r1.child.kill('SIGKILL')
    await r1.exited
    running.delete('r1')

    // While nobody owns them: a change and a soft delete (no webhook: only a sweep and a reconciliation see them).
    const marks = new Map<string, number>()
    for (const a of emu.accounts) {
      const clients = await a.control<{ id: string; deleted?: boolean }[]>('GET', '/state/clients')
      const live = clients.filter((c) => c.deleted !== true)
      await api(a, 'PUT', `/api/v1/clients/${live[0]!.id}`, { firstName: 'Moved' })
      await api(a, 'DELETE', `/api/v1/clients/${live[1]!.id}`)
      const log = await a.control<{ seq: number }[]>('GET', '/requests')
      marks.set(a.id, log.length === 0 ? 0 : log[log.length - 1]!.seq)
    }

    const t0 = Date.now()
    const r2 = start('r2')
    for (const a of emu.accounts) {
      await until(
        `${a.id} reconciled by r2`,
        () => query(mirrorOf('r2', a.id), `SELECT 1 FROM sync_runs WHERE kind = 'reconcile' AND ended_at IS NOT NULL`).length > 0,
        60_000,
      )
    }
    const seconds = (Date.now() - t0) / 1000
    const restored = r2
      .output()
      .split('\n')
      .filter((l) => l.includes('takeover: the mirror is restored from the warehouse'))
    expect(restored, r2.output()).toHaveLength(ACCOUNTS)

    const spent: number[] = []
    for (const a of emu.accounts) {
      const db = mirrorOf('r2', a.id)
      expect(await mismatches(a, db)).toEqual([])
      // The custom objects' views of the mirror are built from the restored types, and read what r1's read.
      const views = (file: string) =>
        query(file, `SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name`).map((r) => r.name as string)
      const objectViews = views(db).filter((n) => n.startsWith('obj_'))
      expect(objectViews.length).toBeGreaterThan(0)
      expect(views(db)).toEqual(views(mirrorOf('r1', a.id)))
      for (const v of objectViews)
        expect(query(db, `SELECT count(*) AS n FROM "${v}"`)).toEqual(query(mirrorOf('r1', a.id), `SELECT count(*) AS n FROM "${v}"`))
      // The takeover's cost: every request for the account before its reconciliation started.
      const reconcileAt = query(db, `SELECT min(started_at) AS at FROM sync_runs WHERE kind = 'reconcile'`)[0]!.at as string
      const log = await a.control<{ seq: number; startedAt: string; path: string }[]>('GET', '/requests?path=/api/v1/')
      const before = log.filter((e) => e.seq > marks.get(a.id)! && e.startedAt < reconcileAt)
      spent.push(before.length)
      // Exact in the warehouse too, once the destination caught up with the reconciliation.
      await until(`${a.id} exact in the warehouse`, async () => (await warehouseDiffs(a.id, db)).length === 0, 30_000)
    }
    console.log(
      `takeover of ${ACCOUNTS} accounts of ${ROWS} rows: upstream requests before the reconciliation ${spent.join(', ')}; all reconciled ${seconds.toFixed(1)} s after r2 started`,
    )
    // One request per stream its first sweep resumes (4 record streams, the custom objects' schemas and
    // one per object), nothing re-read: a backfill of these accounts takes about 17.
    for (const n of spent) expect(n).toBeLessThanOrEqual(7)
  }, 240_000)
})

describe('a takeover that goes on with the old owner’s sweeps', () => {
  test('r4 resumes r3’s schedule without a reconciliation; a deletion r3 applied from a delivery but never replicated ends deleted in r4’s mirror and the warehouse', async () => {
    const url2 = await createDatabase(inject('postgresUrl'), 'fsm_takeover_resume')
    const config = path.join(tempDir(), 'config.json')
    writeFileSync(
      config,
      JSON.stringify({
        rateLimit: 100_000,
        // Continuous sweeps; the regular reconciliation never fires here: only a takeover's own could run.
        schedules: idleSchedules({ sweep: 'continuous' }),
        destination: { postgres: { url: url2 } },
        sharding: { enabled: 'on', leaseSeconds: LEASE_SECONDS },
        accounts: emu.accounts.map((a) => ({ id: a.id, apiKeyEnv: keyVariable(a) })),
      }),
    )
    const r3 = start('r3', config)
    const stateOf = (id: string) =>
      pgQuery<{ seq: string; sync_state: string | null }>(url2, `SELECT seq, sync_state FROM fsm._fsm_sync_state WHERE account_id = $1`, [
        id,
      ]).catch(() => [])
    for (const a of emu.accounts)
      await until(
        `${a.id} synced by r3 and replicated with its sweep plan`,
        async () => {
          const db = mirrorOf('r3', a.id)
          if (!existsSync(db) || query(db, `SELECT 1 FROM sync_runs WHERE kind = 'sweep' AND outcome = 'success'`).length === 0)
            return false
          const row = (await stateOf(a.id))[0]
          const seq = query(db, 'SELECT max(seq) AS seq FROM change_log')[0]?.seq
          return row?.sync_state?.includes('"plan":"') === true && Number(row.seq) === seq
        },
        90_000,
      )
    // The warehouse stops taking r3's batches: its state rows are locked by this session.
    const lock = new pg.Client({ connectionString: url2 })
    await lock.connect()
    await lock.query('BEGIN')
    await lock.query(`SELECT 1 FROM fsm._fsm_sync_state FOR UPDATE`)
    const a = emu.accounts[0]!
    const live = (await a.control<{ id: string; deleted?: boolean }[]>('GET', '/state/clients')).filter((c) => c.deleted !== true)
    const gone = live[0]!.id
    await api(a, 'DELETE', `/api/v1/clients/${gone}`)
    const body = Buffer.from(JSON.stringify({ id: gone }))
    const res = await request(`${baseUrl(r3)}/webhooks/${a.id}`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'client.deleted',
        'x-service-delivery': 'takeover-delete-1',
        'x-service-signature': sign(SIGNING_SECRET, body),
      },
    })
    await res.body.dump()
    expect(res.statusCode).toBe(200)
    await until(`the deletion applied in r3's mirror`, async () => (await mismatches(a, mirrorOf('r3', a.id))).length === 0, 30_000)
    r3.child.kill('SIGKILL')
    await r3.exited
    running.delete('r3')
    await lock.query('ROLLBACK')
    await lock.end()
    // The warehouse's copy does not hold the deletion: only the replay of the delivery brings it.
    expect(await warehouseDiffs(a.id, mirrorOf('r3', a.id), url2)).not.toEqual([])

    const mark = (await a.control<{ seq: number }[]>('GET', '/requests')).at(-1)?.seq ?? 0
    const r4 = start('r4', config)
    // (Its file may exist before its tables do.)
    const exact = (db: string) =>
      mismatches(a, db).then(
        (m) => m.length === 0,
        () => false,
      )
    await until(`${a.id} exact in r4's mirror`, () => exact(mirrorOf('r4', a.id)), 60_000)
    await until(`${a.id} exact in the warehouse`, async () => (await warehouseDiffs(a.id, mirrorOf('r4', a.id), url2)).length === 0, 30_000)
    const spent = (await a.control<{ seq: number; path: string }[]>('GET', '/requests?path=/api/v1/')).filter((e) => e.seq > mark)
    const lines = r4
      .output()
      .split('\n')
      .filter((l) => l.includes('takeover: the sweeps go on from the mirror') && l.includes(a.id))
    // Its first acquire (a lease lapsed under load is taken again, from its own mirror).
    expect(lines.length, r4.output()).toBeGreaterThan(0)
    expect(JSON.parse(lines[0]!)).toMatchObject({ restored: true, resumed: true, reconcile: false })
    expect(query(mirrorOf('r4', a.id), `SELECT 1 FROM sync_runs WHERE kind = 'reconcile'`)).toEqual([])
    console.log(`takeover resuming the schedule: ${spent.length} upstream requests until exact (${spent.map((e) => e.path).join(', ')})`)
    // At most a sweep of each of the two streams come due and the delivery's own look-up: nothing read again.
    expect(spent.length).toBeLessThanOrEqual(3)
  }, 240_000)
})
