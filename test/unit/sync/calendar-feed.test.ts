// The change-record reading of calendar-a's feed: key names are "not shown" in the spec, so several
// spellings are accepted, `raw` keeps the record, and the unique key makes a re-read a no-op.
import { describe, expect, test } from 'vitest'
import { calendarChangeRow, feedPage, resumePoint } from '../../../src/sync/calendar-feed.js'

describe('calendar-a change records', () => {
  test('camelCase keys (what the emulator sends)', () => {
    const r = calendarChangeRow({ action: 'updated', visitId: 'v1', externalEventId: 'calendar-a_1', changedAt: '2026-11-23T10:00:00Z' })
    expect(r).toEqual({
      change_key: 'calendar-a_1@2026-11-23T10:00:00.000Z',
      action: 'updated',
      visit_id: 'v1',
      external_event_id: 'calendar-a_1',
      changed_at: '2026-11-23T10:00:00.000Z',
      raw: JSON.stringify({ action: 'updated', visitId: 'v1', externalEventId: 'calendar-a_1', changedAt: '2026-11-23T10:00:00Z' }),
    })
  })

  test('snake_case and nested spellings', () => {
    expect(
      calendarChangeRow({ type: 'deleted', visit: { id: 'v2' }, external_event_id: 'e2', updated_at: '2026-11-23T10:00:00.000Z' }),
    ).toMatchObject({
      action: 'deleted',
      visit_id: 'v2',
      external_event_id: 'e2',
      change_key: 'e2@2026-11-23T10:00:00.000Z',
    })
  })

  test('without an event id or a time, the key is a hash of the record: the same record keeps one key', () => {
    const a = calendarChangeRow({ action: 'created', eventId: undefined, note: 'x' })
    expect(a?.change_key).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(calendarChangeRow({ action: 'created', note: 'x' })?.change_key).toBe(a?.change_key)
    expect(a).toMatchObject({ visit_id: null, external_event_id: null, changed_at: null })
  })

  test('something that is not a record is skipped', () => {
    expect(calendarChangeRow('x')).toBeUndefined()
    expect(calendarChangeRow(null)).toBeUndefined()
    expect(calendarChangeRow([1])).toBeUndefined()
  })

  test('pages: records in data (or data.changes), next_cursor at the top level or in meta', () => {
    expect(feedPage({ next_cursor: 'c2' }, [{ action: 'created' }], undefined)).toEqual({ records: [{ action: 'created' }], next: 'c2' })
    expect(feedPage({ next_cursor: null }, [], undefined)).toEqual({ records: [], next: null })
    expect(feedPage({}, { changes: [{}] }, { nextCursor: 'm' })).toEqual({ records: [{}], next: 'm' })
    expect(feedPage({}, { something: 1 }, undefined)).toEqual({ records: [], next: null })
  })
})

describe('the next read of the feed', () => {
  const T = Date.parse('2026-11-23T12:00:00.000Z')
  // Review finding (2026-11-23): after progress the next `since` was exactly the newest change seen,
  // so a change committed late with an earlier time was never read.
  test('resumes from the newest change seen less the look-back', () => {
    expect(resumePoint('2026-11-23T11:00:00.000Z', T, 60_000, '2026-11-23T10:00:00.000Z')).toBe('2026-11-23T10:59:00.000Z')
  })
  test('never earlier than the previous point', () => {
    expect(resumePoint('2026-11-23T10:00:30.000Z', T, 60_000, '2026-11-23T10:00:00.000Z')).toBe('2026-11-23T10:00:00.000Z')
  })
  test('nothing newer: the walk start less the look-back', () => {
    expect(resumePoint(undefined, T, 60_000, undefined)).toBe('2026-11-23T11:59:00.000Z')
    expect(resumePoint('2026-11-23T10:00:00.000Z', T, 60_000, '2026-11-23T10:00:00.000Z')).toBe('2026-11-23T11:59:00.000Z')
  })
})
