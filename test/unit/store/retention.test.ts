// The retention pass on a real mirror file: what goes, what stays, in batches of bounded size, and
// the file shrinking afterwards.
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { enableIncrementalVacuum, fileBytes, incrementalVacuumEnabled } from '../../../src/store/sqlite/incremental-vacuum.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { runRetention, type RetentionSettings } from '../../../src/store/repositories/retention.js'
import { tempDir, tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const DAY = 86_400_000
const NOW = Date.UTC(2026, 5, 1)
const ago = (days: number) => new Date(NOW - days * DAY).toISOString()
const SETTINGS: RetentionSettings = {
  deliveriesDays: 14,
  deliveryIdsDays: 30,
  runsDays: 90,
  calendarChangesDays: 90,
  batchRows: 1000,
  vacuumPages: 1_000_000,
}
const noPause = () => Promise.resolve()

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

let seq = 0
function delivery(id: string, receivedDaysAgo: number, state: 'applied' | 'pending' | 'failed', body = '{"id":"x"}'): void {
  m.sqlite
    .prepare(
      `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, verified_with, processed_at, error) VALUES (?, ?, 'client.updated', ?, ?, 'current', ?, ?)`,
    )
    .run(
      id,
      ++seq,
      ago(receivedDaysAgo),
      body,
      state === 'applied' ? ago(receivedDaysAgo) : null,
      state === 'failed' ? 'unknown event' : null,
    )
}
const inbox = () =>
  Object.fromEntries(
    (
      m.sqlite.prepare(`SELECT delivery_id, raw, body_dropped_at FROM webhook_inbox`).all() as {
        delivery_id: string
        raw: string
        body_dropped_at: string | null
      }[]
    ).map((r) => [r.delivery_id, r.body_dropped_at === null ? r.raw : 'id only']),
  )

describe('retention of webhook deliveries', () => {
  test('old applied deliveries lose their body, then their row; recent, unapplied and failed ones stay whole', async () => {
    delivery('old', 50, 'applied')
    delivery('pending-old', 60, 'pending')
    delivery('failed-old', 60, 'failed')
    delivery('middle', 20, 'applied')
    delivery('recent', 5, 'applied')
    const r = await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(inbox()).toEqual({ 'pending-old': '{"id":"x"}', 'failed-old': '{"id":"x"}', middle: 'id only', recent: '{"id":"x"}' })
    expect(m.sqlite.prepare(`SELECT raw, raw_bytes, body_dropped_at FROM webhook_inbox WHERE delivery_id = 'middle'`).get()).toEqual({
      raw: '',
      raw_bytes: null,
      body_dropped_at: new Date(NOW).toISOString(),
    })
    expect(r.removed).toMatchObject({ webhook_inbox_bodies: 2, webhook_inbox: 1 })
  })

  test('a delivery whose body was dropped is still a duplicate when it is replayed', async () => {
    delivery('replayed', 20, 'applied')
    delivery('newest', 1, 'applied')
    await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    const insert = m.sqlite.prepare(
      `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, verified_with)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM webhook_inbox), 'client.updated', ?, '{}', 'current') ON CONFLICT(delivery_id) DO NOTHING`,
    )
    expect(insert.run('replayed', new Date(NOW).toISOString()).changes).toBe(0)
  })

  test('a skipped delivery keeps its reason, and every other column, when its body is dropped', async () => {
    delivery('skipped', 20, 'applied')
    delivery('newest', 1, 'applied')
    m.sqlite.prepare(`UPDATE webhook_inbox SET skipped = 'stream jobs is not selected', attempts = 3 WHERE delivery_id = 'skipped'`).run()
    // A column a later migration adds is carried over too.
    m.sqlite.exec(`ALTER TABLE webhook_inbox ADD COLUMN added_later TEXT`)
    m.sqlite.prepare(`UPDATE webhook_inbox SET added_later = 'kept' WHERE delivery_id = 'skipped'`).run()
    const before = m.sqlite.prepare(`SELECT * FROM webhook_inbox WHERE delivery_id = 'skipped'`).get() as Record<string, unknown>
    await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    const after = m.sqlite.prepare(`SELECT * FROM webhook_inbox WHERE delivery_id = 'skipped'`).get() as Record<string, unknown>
    expect(after).toEqual({ ...before, raw: '', raw_bytes: null, body_dropped_at: new Date(NOW).toISOString() })
    expect(after).toMatchObject({ skipped: 'stream jobs is not selected', added_later: 'kept', attempts: 3 })
  })

  test('the newest delivery row stays however old, so receipt order keeps counting up from it', async () => {
    for (let i = 0; i < 5; i++) delivery(`d${i}`, 60, 'applied')
    await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(m.sqlite.prepare(`SELECT delivery_id, seq FROM webhook_inbox`).all()).toEqual([{ delivery_id: 'd4', seq }])
  })

  test('"off" keeps every body and every row', async () => {
    delivery('old', 400, 'applied')
    delivery('newer', 300, 'applied')
    await runRetention(m.sqlite, NOW, { ...SETTINGS, deliveriesDays: 'off' }, { pause: noPause })
    expect(inbox()).toEqual({ old: '{"id":"x"}', newer: '{"id":"x"}' })
    await runRetention(m.sqlite, NOW, { ...SETTINGS, deliveryIdsDays: 'off' }, { pause: noPause })
    expect(inbox()).toEqual({ old: 'id only', newer: 'id only' })
  })

  test('deletes run in batches of at most batchRows, with a pause (the event loop) between two', async () => {
    for (let i = 0; i < 45; i++) delivery(`d${i}`, 60, 'applied')
    delivery('newest', 1, 'applied')
    const count = (sql: string) => m.sqlite.prepare(sql).pluck().get() as number
    const seen: [number, number][] = []
    const pause = () => {
      seen.push([count(`SELECT count(*) FROM webhook_inbox WHERE body_dropped_at IS NULL`), count(`SELECT count(*) FROM webhook_inbox`)])
      return Promise.resolve()
    }
    await runRetention(m.sqlite, NOW, { ...SETTINGS, batchRows: 10, vacuumPages: 0 }, { pause })
    // Bodies 46 -> 36 -> 26 -> 16 -> 6 -> 1 (a short batch ends the step), then rows 46 -> 36 -> ... -> 1.
    expect(seen).toEqual([
      [36, 46],
      [26, 46],
      [16, 46],
      [6, 46],
      [1, 46],
      [1, 36],
      [1, 26],
      [1, 16],
      [1, 6],
      [1, 1],
    ])
    expect(count(`SELECT count(*) FROM webhook_inbox`)).toBe(1)
  })

  test('a pass stopped by its signal stops between two batches and reports it', async () => {
    for (let i = 0; i < 30; i++) delivery(`d${i}`, 60, 'applied')
    const controller = new AbortController()
    const r = await runRetention(
      m.sqlite,
      NOW,
      { ...SETTINGS, batchRows: 10 },
      { signal: controller.signal, pause: () => (controller.abort(), Promise.resolve()) },
    )
    expect(r).toMatchObject({ aborted: true, removed: { webhook_inbox_bodies: 10, webhook_inbox: 0 } })
  })
})

describe('retention of runs and calendar changes', () => {
  test('finished runs past runsDays go; running runs, recent runs and the last run of each stream stay', async () => {
    const run = m.sqlite
      .prepare(`INSERT INTO sync_runs (kind, stream, started_at, ended_at, outcome) VALUES ('sweep', ?, ?, ?, ?) RETURNING id`)
      .pluck()
    run.get('clients', ago(200), ago(200), 'success')
    const last = run.get('jobs', ago(200), ago(200), 'success') as number
    run.get('clients', ago(200), null, 'running')
    // It changed rows: a quiet sweep would go after one day.
    m.sqlite.prepare(`UPDATE sync_runs SET rows = 2 WHERE id = ?`).run(run.get('clients', ago(10), ago(10), 'success'))
    m.sqlite.prepare(`INSERT INTO sync_state (stream, last_run_id, updated_at) VALUES ('jobs', ?, ?)`).run(last, ago(200))
    const r = await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(m.sqlite.prepare(`SELECT stream, outcome, ended_at FROM sync_runs ORDER BY id`).all()).toEqual([
      { stream: 'jobs', outcome: 'success', ended_at: ago(200) },
      { stream: 'clients', outcome: 'running', ended_at: null },
      { stream: 'clients', outcome: 'success', ended_at: ago(10) },
    ])
    expect(r.removed.sync_runs).toBe(1)
  })

  test('quiet sweeps (successful, no row changed) go after one day; sweeps that changed rows and other runs keep runsDays', async () => {
    const run = m.sqlite.prepare(
      `INSERT INTO sync_runs (kind, stream, started_at, ended_at, outcome, rows) VALUES (?, 'jobs', ?, ?, ?, ?) RETURNING id`,
    )
    run.get('sweep', ago(2), ago(2), 'success', 0)
    run.get('sweep', ago(0.5), ago(0.5), 'success', 0)
    run.get('sweep', ago(2), ago(2), 'success', 3)
    run.get('sweep', ago(2), ago(2), 'error', 0)
    run.get('reconcile', ago(2), ago(2), 'success', 0)
    const r = await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(m.sqlite.prepare(`SELECT kind, outcome, rows, ended_at FROM sync_runs ORDER BY id`).all()).toEqual([
      { kind: 'sweep', outcome: 'success', rows: 0, ended_at: ago(0.5) },
      { kind: 'sweep', outcome: 'success', rows: 3, ended_at: ago(2) },
      { kind: 'sweep', outcome: 'error', rows: 0, ended_at: ago(2) },
      { kind: 'reconcile', outcome: 'success', rows: 0, ended_at: ago(2) },
    ])
    expect(r.removed.sync_runs).toBe(1)
  })

  test('runsDays "off" keeps every run but quiet sweeps, which still go after one day', async () => {
    const run = m.sqlite.prepare(
      `INSERT INTO sync_runs (kind, stream, started_at, ended_at, outcome, rows) VALUES (?, 'jobs', ?, ?, ?, ?) RETURNING id`,
    )
    run.get('sweep', ago(400), ago(400), 'success', 0)
    run.get('sweep', ago(2), ago(2), 'success', 0)
    run.get('sweep', ago(0.5), ago(0.5), 'success', 0)
    run.get('sweep', ago(400), ago(400), 'success', 3)
    run.get('reconcile', ago(400), ago(400), 'success', 0)
    const r = await runRetention(m.sqlite, NOW, { ...SETTINGS, runsDays: 'off' }, { pause: noPause })
    expect(m.sqlite.prepare(`SELECT kind, rows, ended_at FROM sync_runs ORDER BY id`).all()).toEqual([
      { kind: 'sweep', rows: 0, ended_at: ago(0.5) },
      { kind: 'sweep', rows: 3, ended_at: ago(400) },
      { kind: 'reconcile', rows: 0, ended_at: ago(400) },
    ])
    expect(r.removed.sync_runs).toBe(2)
  })

  test('calendar changes fetched past calendarChangesDays go, newer ones stay', async () => {
    const change = m.sqlite.prepare(
      `INSERT INTO calendar_changes (integration, change_key, raw, fetched_at) VALUES ('calendar-a', ?, '{}', ?)`,
    )
    change.run('old', ago(100))
    change.run('new', ago(1))
    await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(m.sqlite.prepare(`SELECT change_key FROM calendar_changes`).pluck().all()).toEqual(['new'])
  })
})

describe('the mirror file shrinks', () => {
  test('a new mirror gives the pages of deleted deliveries back to the file system', async () => {
    const body = JSON.stringify({ id: 'x', notes: 'n'.repeat(4000) })
    m.sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) delivery(`d${i}`, 60, 'applied', body)
    })()
    delivery('newest', 1, 'applied')
    m.sqlite.pragma('wal_checkpoint(TRUNCATE)')
    const before = fileBytes(m.path)
    expect(before).toBeGreaterThan(8_000_000)
    const r = await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    m.sqlite.pragma('wal_checkpoint(TRUNCATE)')
    expect(r.freedPages).toBeGreaterThan(1000)
    expect(fileBytes(m.path)).toBeLessThan(before / 4)
  })

  test('dropping bodies alone shrinks the file: the compact rows do not keep the pages of the bodies', async () => {
    const body = JSON.stringify({ id: 'x', notes: 'n'.repeat(1000) })
    m.sqlite.transaction(() => {
      for (let i = 0; i < 6000; i++) delivery(`d${i}`, 20, 'applied', body)
    })()
    m.sqlite.pragma('wal_checkpoint(TRUNCATE)')
    const before = fileBytes(m.path)
    const r = await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    m.sqlite.pragma('wal_checkpoint(TRUNCATE)')
    expect(r.removed).toMatchObject({ webhook_inbox_bodies: 6000, webhook_inbox: 0 })
    expect(fileBytes(m.path)).toBeLessThan(before / 2)
  })

  test('vacuumPages bounds what one pass gives back; the next pass goes on', async () => {
    const body = JSON.stringify({ id: 'x', notes: 'n'.repeat(4000) })
    m.sqlite.transaction(() => {
      for (let i = 0; i < 500; i++) delivery(`d${i}`, 60, 'applied', body)
    })()
    delivery('newest', 1, 'applied')
    const first = await runRetention(m.sqlite, NOW, { ...SETTINGS, vacuumPages: 100 }, { pause: noPause })
    expect(first.freedPages).toBe(100)
    expect(m.sqlite.pragma('freelist_count', { simple: true })).toBeGreaterThan(0)
    await runRetention(m.sqlite, NOW, SETTINGS, { pause: noPause })
    expect(m.sqlite.pragma('freelist_count', { simple: true })).toBe(0)
  })

  test('a mirror created before incremental auto-vacuum is switched to it by one VACUUM, once', async () => {
    const file = path.join(tempDir(), 'older.db')
    const older = new Database(file)
    older.pragma('journal_mode = WAL')
    older.exec('CREATE TABLE made_by_an_older_version (x)')
    older.close()
    const mirror = await openMirror(file)
    try {
      expect(incrementalVacuumEnabled(mirror.sqlite)).toBe(false)
      expect(enableIncrementalVacuum(mirror.sqlite, file)).toMatchObject({
        durationMs: expect.any(Number) as number,
        bytesAfter: expect.any(Number) as number,
      })
      expect(incrementalVacuumEnabled(mirror.sqlite)).toBe(true)
      expect(enableIncrementalVacuum(mirror.sqlite, file)).toBeUndefined()
    } finally {
      await mirror.close()
    }
  })
})
