// An upstream that writes its UTC datetimes without a zone (`2026-01-05T10:00:00.000`), read by a
// sync running in a zone west of Greenwich: the values are UTC (spec, Conventions), so the mirror
// stores them unshifted and the cursor stays at the newest real instant. Read in local time they
// were stored 5 h late and the cursor jumped past every update of the next 5 h.
import path from 'node:path'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

const HOUR_MS = 3_600_000

function read(db: string, sql: string): Record<string, unknown>[] {
  const sqlite = new Database(db, { readonly: true })
  try {
    return sqlite.prepare(sql).all() as Record<string, unknown>[]
  } finally {
    sqlite.close()
  }
}

test('zone-less updatedAt from upstream, synced under TZ=America/New_York, is stored as UTC and no later update is lost', async () => {
  const emu = await emulatorEnv({ seed: 11, counts: { clients: 60, jobs: 5, invoices: 5, customRecords: 20 } })
  await emu.control('POST', '/faults', { route: 'GET /api/v1/*', zonelessTimes: true })
  const db = path.join(tempDir(), 'mirror.db')
  const env = cleanEnv({ TZ: 'America/New_York', FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db })
  const sync = async () => {
    const r = await runCli(['sync', '--stream', 'clients', '--stream', 'objects:equipment'], env)
    expect(r.code, r.stderr + r.stdout).toBe(0)
  }
  // The answers really are zone-less.
  expect((await emu.api('GET', '/api/v1/clients?limit=1')).body.data[0].updatedAt).toMatch(/\d$/)

  await sync()
  const upstream = (await emu.state('clients')).filter((c) => c.deleted !== true)
  const stored = new Map(read(db, 'SELECT id, updated_at, created_at FROM clients').map((r) => [r.id, r]))
  expect(stored.size).toBe(upstream.length)
  for (const c of upstream) expect(stored.get(c.id), c.id).toMatchObject({ updated_at: c.updatedAt, created_at: c.createdAt })
  const records = (await emu.state('objects/equipment')).filter((r) => r.deleted !== true)
  const storedRecords = new Map(
    read(db, `SELECT id, updated_at FROM custom_records WHERE slug = 'equipment'`).map((r) => [r.id, r.updated_at]),
  )
  expect(records.length).toBeGreaterThan(0)
  for (const r of records) expect(storedRecords.get(r.id), r.id).toBe(r.updatedAt)

  // An update one hour after the newest record, made in the web app (no webhook): only the next
  // sweep can see it, and only if the cursor is not hours ahead of it.
  const newest = Math.max(...upstream.map((c) => Date.parse(c.updatedAt)))
  const [cursor] = read(db, `SELECT cursor FROM sync_state WHERE stream = 'clients'`)
  expect(JSON.parse(String(cursor!.cursor)).since).toBe(new Date(newest).toISOString())
  const target = upstream[0]!
  const later = new Date(newest + HOUR_MS).toISOString()
  await emu.control('POST', '/mutate', {
    resource: 'clients',
    op: 'update',
    id: target.id,
    fields: { notes: 'changed after the backfill', updatedAt: later },
  })

  await sync()
  const [row] = read(db, `SELECT updated_at, raw FROM clients WHERE id = '${target.id}'`)
  expect(row!.updated_at).toBe(later)
  expect(JSON.parse(String(row!.raw)).notes).toBe('changed after the backfill')
})
