// The store's repositories that no other test reaches directly, each on a real migrated mirror.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { CalendarChangeStore } from '../../../src/store/repositories/calendar-changes.js'
import { replaceClientFields } from '../../../src/store/repositories/client-fields.js'
import { IntegrationStatusStore } from '../../../src/store/repositories/integration-status.js'
import { RecordStatusWriter } from '../../../src/store/repositories/record-status-writer.js'
import { MIGRATIONS } from '../../../src/store/migrations/index.js'
import { appliedMigrationCount, pageRoom, quickCheck } from '../../../src/store/sqlite/mirror-health.js'
import { customRecordSlugs, RecordTable } from '../../../src/store/repositories/record-tables.js'
import { RunHistory } from '../../../src/store/read-models/run-history.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { inboxCounts, WebhookInboxStore } from '../../../src/store/repositories/webhook-inbox-store.js'
import { WebhookStateStore } from '../../../src/store/repositories/webhook-state.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

const T = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString()

describe('RunHistory', () => {
  test('finished runs since a start time, in order; requests of runs that ended or started since a moment', () => {
    const state = new SyncStateStore(m.sqlite)
    const history = new RunHistory(m.sqlite)
    expect([history.lastRunId(), history.lastChangeSeq(), history.requestsSince(T(0))]).toEqual([0, 0, 0])
    const early = state.startRun('sweep', 'clients', T(1))
    state.finishRun(early, { outcome: 'success', rows: 1, requests: 2 }, T(2))
    const late = state.startRun('reconcile', 'jobs', T(10))
    state.finishRun(late, { outcome: 'error', rows: 0, requests: 3, error: 'boom' }, T(12))
    const going = state.startRun('sweep', 'visits', T(11))
    expect(history.finishedSince(T(5))).toEqual([
      {
        id: late,
        stream: 'jobs',
        kind: 'reconcile',
        outcome: 'error',
        rows: 0,
        requests: 3,
        error: 'boom',
        startedAt: T(10),
        endedAt: T(12),
      },
    ])
    expect(history.finishedAfter(0).map((r) => r.id)).toEqual([early, late])
    expect(history.firstRunningAfter(0)).toBe(going)
    expect(history.firstRunningAfter(going)).toBeUndefined()
    expect(history.lastRunId()).toBe(going)
    // The running run counts from its start (0 requests so far); the early one ended before T(5).
    expect(history.requestsSince(T(5))).toBe(3)
  })
})

describe('CalendarChangeStore', () => {
  const change = (key: string) => ({
    change_key: key,
    action: 'updated',
    visit_id: 'v1',
    external_event_id: null,
    changed_at: null,
    raw: '{}',
  })

  test('stores each change once by key, also within one call and past one statement of rows', () => {
    const store = new CalendarChangeStore(m.sqlite, 'calendar-a')
    expect(store.insert([], T(0))).toBe(0)
    expect(store.insert([change('a'), change('b'), change('a')], T(0))).toBe(2)
    const many = Array.from({ length: 1_200 }, (_, i) => change(`k${i}`))
    expect(store.insert([change('b'), ...many], T(1))).toBe(1_200)
    const stored = m.sqlite.prepare(`SELECT integration, fetched_at FROM calendar_changes WHERE change_key = 'a'`).get()
    expect(stored).toEqual({ integration: 'calendar-a', fetched_at: T(0) })
    expect(m.sqlite.prepare(`SELECT count(*) FROM calendar_changes`).pluck().get()).toBe(1_202)
  })
})

describe('IntegrationStatusStore', () => {
  test('a read replaces every field; a failed read keeps them and records why', () => {
    const store = new IntegrationStatusStore(m.sqlite)
    store.recordError('calendar-a', 'first read failed', T(0))
    store.recordRead(
      'calendar-a',
      { connected: true, email: 'a@b.c', lastSyncAt: T(1), calendarId: 'cal', raw: '{"connected":true}' },
      T(2),
    )
    const row = () => m.sqlite.prepare(`SELECT * FROM integration_status WHERE name = 'calendar-a'`).get()
    expect(row()).toEqual({
      name: 'calendar-a',
      connected: 1,
      email: 'a@b.c',
      last_sync_at: T(1),
      calendar_id: 'cal',
      error: null,
      raw: '{"connected":true}',
      checked_at: T(2),
    })
    store.recordError('calendar-a', 'timed out', T(3))
    expect(row()).toMatchObject({ connected: 1, email: 'a@b.c', error: 'timed out', checked_at: T(3) })
  })
})

describe('WebhookStateStore', () => {
  test('set replaces the value under its key', () => {
    const store = new WebhookStateStore(m.sqlite)
    expect(store.get('k')).toBeUndefined()
    store.set('k', 'one', T(0))
    store.set('k', 'two', T(1))
    expect(store.get('k')).toBe('two')
    expect(m.sqlite.prepare(`SELECT updated_at FROM webhook_state WHERE key = 'k'`).pluck().get()).toBe(T(1))
  })
})

describe('record tables', () => {
  test('live ids and counts, within a scope and stored before a time; the slugs of a custom record id', () => {
    const insert = m.sqlite.prepare(
      `INSERT INTO custom_records (slug, id, updated_at, deleted_at, raw, synced_at) VALUES (?, ?, 't', ?, '{}', ?)`,
    )
    insert.run('pets', 'r1', null, T(1))
    insert.run('pets', 'r2', null, T(5))
    insert.run('pets', 'r3', T(2), T(1))
    insert.run('cars', 'r1', null, T(1))
    const pets = new RecordTable(m.sqlite, 'custom_records', { scope: { column: 'slug', value: 'pets' } })
    expect(pets.liveIds().sort()).toEqual(['r1', 'r2'])
    expect(pets.liveIds({ syncedBefore: T(3) })).toEqual(['r1'])
    expect(pets.liveCount()).toBe(2)
    expect(new RecordTable(m.sqlite, 'custom_records').liveCount()).toBe(3)
    const slugs = customRecordSlugs(m.sqlite)
    expect(slugs('r1').sort()).toEqual(['cars', 'pets'])
    expect(slugs('nope')).toEqual([])
  })

  test("a job's status moves only from the status it still shows, and the move is logged", () => {
    m.sqlite.prepare(`INSERT INTO jobs (id, job_status, updated_at, raw, synced_at) VALUES ('j1', 'scheduled', ?, '{}', ?)`).run(T(1), T(1))
    const jobs = new RecordStatusWriter(m.sqlite, 'jobs', 'job_status')
    expect(jobs.move('j1', 'completed', 'closed', T(2))).toBe(false)
    expect(jobs.move('j1', 'scheduled', 'in_progress', T(3))).toBe(true)
    expect(jobs.move('missing', 'scheduled', 'in_progress', T(3))).toBe(false)
    expect(m.sqlite.prepare(`SELECT job_status, updated_at, synced_at FROM jobs`).get()).toEqual({
      job_status: 'in_progress',
      updated_at: T(1),
      synced_at: T(3),
    })
    expect(m.sqlite.prepare(`SELECT table_name, record_id, op, updated_at, changed_at FROM change_log`).all()).toEqual([
      { table_name: 'jobs', record_id: 'j1', op: 'upsert', updated_at: T(1), changed_at: T(3) },
    ])
  })

  test('client fields are replaced whole', () => {
    const field = (id: string) => ({ id, name: id, label: null, type: 'text', options: null, raw: '{}' })
    replaceClientFields(m.sqlite, [field('a'), field('b')], T(0))
    replaceClientFields(m.sqlite, [field('c')], T(1))
    expect(m.sqlite.prepare(`SELECT id, synced_at FROM client_fields`).all()).toEqual([{ id: 'c', synced_at: T(1) }])
  })
})

describe('the inbox counts and the file checks', () => {
  test('backlog, failed and skipped counted alike by the store and the report', () => {
    const inbox = new WebhookInboxStore(m.sqlite)
    const d = (id: string) => ({
      delivery: { deliveryId: id, event: 'job.created', body: Buffer.from('{}'), verifiedWith: 'x' },
      receivedAt: T(0),
    })
    expect(inbox.insertGroup([d('a'), d('b'), d('c'), d('e'), d('a')], false)).toEqual([true, true, true, true, false])
    inbox.markFailed('b', 'bad')
    inbox.markProcessed('c', T(1))
    inbox.markSkipped('e', 'unknown event', T(1))
    expect(inbox.backlog()).toBe(1)
    expect(inboxCounts(m.sqlite)).toEqual({ backlog: 1, failed: 1, skipped: 1 })
  })

  test('migrations recorded, pages, and an intact mirror', () => {
    expect(appliedMigrationCount(m.sqlite)).toBe(Object.keys(MIGRATIONS).length)
    const room = pageRoom(m.sqlite)
    expect(room.pageSize).toBeGreaterThan(0)
    expect(room.maxPageCount).toBeGreaterThan(room.pageCount)
    expect(quickCheck(m.sqlite, 5)).toEqual([])
  })
})
