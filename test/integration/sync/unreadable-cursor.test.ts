// A stored cursor that does not parse (not JSON, JSON of another shape, a time that is not a time)
// is set aside, never a crash loop: `fsm-sync sync` completes, the stream restarts from a full
// walk, the mirror is exact, the problem is logged and shown by `status`, and the next run resumes
// from the good cursor the restart stored. The same for the point of calendar-a's change feed.
import path from 'node:path'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { KeysetCursorSchema } from '../../../src/api/keyset/index.js'
import { FeedCursorSchema } from '../../../src/sync/calendar-feed.js'
import { ObjectCursorSchema } from '../../../src/sync/custom-object-sync.js'
import { compareMirror } from '../../support/compare-mirror.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { syncOnce } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'

const GARBAGE: Record<string, string> = {
  clients: 'not json {',
  jobs: '{"cursor":42}',
  visits: '{"since":"yesterday","seenIdsAtCursor":[]}',
  invoices: '"2026-01-01T00:00:00.000Z"',
  'objects:equipment': '{"updatedSince":"the day before"}',
}

test('garbage cursors of record streams and a custom object: sync completes, the mirror is exact, a warning is logged, the next run resumes', async () => {
  const emu = await emulatorEnv({ seed: 53, counts: { clients: 40, jobs: 30, invoices: 20, customRecords: 60 } })
  const db = path.join(tempDir(), 'mirror.db')
  const env = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' })
  const streams = [...RECORD_STREAMS.map((s) => s.name), 'objects:equipment']
  const sync = async () => {
    const r = await runCli(['sync', ...streams.flatMap((s) => ['--stream', s])], env)
    expect(r.code, r.stderr + r.stdout).toBe(0)
    return r.stdout + r.stderr
  }
  const withDb = <T>(fn: (sqlite: Database.Database) => T): T => {
    const sqlite = new Database(db)
    try {
      return fn(sqlite)
    } finally {
      sqlite.close()
    }
  }
  const exact = async () => {
    const sqlite = new Database(db, { readonly: true })
    try {
      const { mismatches } = await compareMirror(
        async (r) => (await emu.state(r)) as Record<string, unknown>[],
        (sql, ...p) => sqlite.prepare(sql).all(...p) as Record<string, unknown>[],
        ['equipment'],
      )
      expect(mismatches).toEqual([])
    } finally {
      sqlite.close()
    }
  }
  const cursorOf = (stream: string) =>
    withDb((s) => s.prepare('SELECT cursor FROM sync_state WHERE stream = ?').pluck().get(stream) as string | null)
  const goodCursors = () => {
    for (const s of RECORD_STREAMS) expect(KeysetCursorSchema.safeParse(JSON.parse(cursorOf(s.name) ?? 'null')).success, s.name).toBe(true)
    expect(ObjectCursorSchema.safeParse(JSON.parse(cursorOf('objects:equipment') ?? 'null')).success).toBe(true)
  }

  await sync()
  goodCursors()
  withDb((s) => {
    for (const [stream, text] of Object.entries(GARBAGE)) s.prepare('UPDATE sync_state SET cursor = ? WHERE stream = ?').run(text, stream)
  })
  // Changes the restart must bring in.
  await emu.control('POST', '/mutate', {
    resource: 'clients',
    op: 'update',
    count: 3,
    fields: { notes: 'changed while the cursor was bad' },
  })
  await emu.control('POST', '/mutate', { resource: 'jobs', op: 'create', count: 2 })
  await emu.control('POST', '/mutate', { resource: 'objects/equipment', op: 'create', count: 2 })

  const out = await sync()
  const warnings = out.split('\n').filter((l) => l.includes('stored cursor could not be read'))
  expect(warnings.map((l) => (JSON.parse(l) as { stream: string }).stream).sort()).toEqual(Object.keys(GARBAGE).sort())
  expect(out).toMatch(/"stream":"clients","problem":"not JSON/)
  expect(out).toMatch(/"stream":"visits","problem":"since: not a time"/)
  await exact()
  goodCursors()
  const runs = withDb((s) =>
    s.prepare(`SELECT stream, outcome, details FROM sync_runs WHERE id IN (SELECT max(id) FROM sync_runs GROUP BY stream)`).all(),
  ) as { stream: string; outcome: string; details: string | null }[]
  for (const stream of Object.keys(GARBAGE)) {
    const run = runs.find((r) => r.stream === stream)
    expect(run?.outcome, stream).toBe('success')
    expect(JSON.parse(run?.details ?? '{}'), stream).toHaveProperty('cursorReset')
  }
  const status = await runCli(['status'], env)
  expect(status.stdout).toMatch(/clients .*stored cursor of clients could not be read \(not JSON/)

  // The next run resumes from the stored cursors: no warning, nothing set aside, the change arrives.
  await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 2, fields: { notes: 'changed after the restart' } })
  const again = await sync()
  expect(again).not.toContain('stored cursor could not be read')
  const next = withDb((s) =>
    s.prepare(`SELECT stream, details FROM sync_runs WHERE id IN (SELECT max(id) FROM sync_runs GROUP BY stream)`).all(),
  ) as { stream: string; details: string | null }[]
  for (const r of next) expect(r.details ?? '', r.stream).not.toContain('cursorReset')
  await exact()
  goodCursors()
})

test("a garbage point of calendar-a's change feed: the read restarts from the feed's default point and stores a good one", async () => {
  const emu = await emulatorEnv({ counts: { clients: 3, jobs: 5, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const db = path.join(tempDir(), 'mirror.db')
  await syncOnce(emu, db)
  const env = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' })
  const feedSince = async () => {
    const reads = (await emu.control('GET', '/requests?path=/api/v1/integrations/calendar-a/sync&method=GET')) as { query: string }[]
    await emu.control('POST', '/requests/clear')
    return reads.map((r) => new URLSearchParams(r.query).get('since'))
  }
  const trigger = async () => {
    const r = await runCli(['trigger', 'calendar-a'], env)
    expect(r.code, r.stderr + r.stdout).toBe(0)
    return r.stdout + r.stderr
  }
  const point = () => {
    const sqlite = new Database(db)
    try {
      return sqlite.prepare(`SELECT cursor FROM sync_state WHERE stream = 'calendar_changes'`).pluck().get() as string
    } finally {
      sqlite.close()
    }
  }
  await trigger()
  await feedSince()
  const sqlite = new Database(db)
  sqlite.prepare(`UPDATE sync_state SET cursor = '{"since":"last tuesday"}' WHERE stream = 'calendar_changes'`).run()
  sqlite.close()

  const out = await trigger()
  expect(out).toMatch(/"stream":"calendar_changes","problem":"since: not a time"/)
  expect(await feedSince()).toEqual([null])
  const stored = FeedCursorSchema.safeParse(JSON.parse(point()))
  expect(stored.success).toBe(true)

  // The next read resumes from the point the restart stored.
  const again = await trigger()
  expect(again).not.toContain('stored cursor could not be read')
  expect((await feedSince())[0]).toBe(stored.data?.since)
})
