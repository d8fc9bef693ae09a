// A takeover without re-reading the account (docs/sharding.md, Takeover from the warehouse): `fsm-sync
// run` replicas as child processes over the multi-account emulator and the suite's Postgres server.
// r1 syncs the accounts and is SIGKILLed; r2, with an empty data folder, restores each mirror from
// the warehouse and spends a few requests per account (the emulator's request log) instead of
// re-reading it; after its first sweep and the reconciliation that follows, every mirror equals its
// account (a change and a soft delete made while nobody owned it included) and the warehouse its mirror.
import { existsSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import type { AccountHandle } from '../../../emulator/index.js'
import { destinationTables } from '../../../src/destination/destination-tables.js'
import { keyVariable } from '../../support/accounts-env.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { query, until, type Running } from '../../support/daemon-env.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { createDatabase, pgQuery } from '../../support/postgres-server.js'
import { idleSchedules } from '../../support/schedules.js'
import { tempDir } from '../../support/temp-mirror.js'
import { startReplica } from './replicas-env.js'

const ACCOUNTS = 3
const ROWS = 600
const LEASE_SECONDS = 3

let emu: EmulatorEnv
let url: string
let file: string
const dirs = new Map<string, string>()
const running = new Map<string, Running>()
const mirrorOf = (replica: string, id: string) => path.join(dirs.get(replica)!, id, 'mirror.db')

function start(name: string): Running {
  const dir = tempDir()
  dirs.set(name, dir)
  const run = startReplica({ name, config: file, baseUrl: emu.url, dataDir: dir, accounts: emu.accounts })
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
async function warehouseDiffs(id: string, db: string): Promise<string[]> {
  const conn = new Database(db, { readonly: true, fileMustExist: true })
  try {
    return await comparePostgres(conn, url, 'fsm', destinationTables(), id)
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
