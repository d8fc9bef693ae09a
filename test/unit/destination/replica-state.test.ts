// The replica's written state, as the state row's columns hold it, and the decision to load it at a start.
import { describe, expect, test } from 'vitest'
import { fingerprintsJson, loadReason, parseWritten } from '../../../src/destination/replica-state.js'

describe('the written state of the replica', () => {
  test('fingerprints and watermarks share one JSON column and read back apart', () => {
    const w = parseWritten(null, null)
    w.fingerprints.set('calendar_changes', 'fp1')
    w.watermarks.set('calendar_changes', '2026-01-01T00:00:00.000Z')
    w.viewsHash = 'v1'
    const json = fingerprintsJson(w)
    expect(JSON.parse(json)).toEqual({ calendar_changes: 'fp1', 'calendar_changes@': '2026-01-01T00:00:00.000Z' })
    const back = parseWritten(json, 'v1')
    expect(back).toEqual(w)
  })

  test('an unreadable column reads as nothing written; a views hash in the JSON is kept when the column is null', () => {
    expect(parseWritten('{not json', null)).toEqual({ fingerprints: new Map(), watermarks: new Map(), viewsHash: undefined })
    const legacy = parseWritten(JSON.stringify({ views: 'old', teams: 'fp', n: 3 }), null)
    expect(legacy).toEqual({ fingerprints: new Map([['teams', 'fp']]), watermarks: new Map(), viewsHash: 'old' })
    expect(parseWritten(JSON.stringify({ views: 'old' }), 'new').viewsHash).toBe('new')
  })
})

describe('whether the replica must be loaded at a start', () => {
  const base = { schemaReload: null, tablesChanged: false, cursor: 10, lastSeq: 12, firstKept: 5 }
  test.each([
    { what: 'it can follow from its cursor', p: base, reason: null },
    { what: 'it is up to date, nothing kept', p: { ...base, lastSeq: 10, firstKept: undefined }, reason: null },
    { what: 'a table was created again', p: { ...base, schemaReload: 'jobs was created' }, reason: 'jobs was created' },
    { what: 'the declarations changed', p: { ...base, tablesChanged: true }, reason: 'the tables changed shape' },
    { what: 'another mirror', p: { ...base, lastSeq: 9 }, reason: "its cursor (10) is past the mirror's last change (9): another mirror" },
    {
      what: 'the next change was pruned',
      p: { ...base, firstKept: 12 },
      reason: 'the mirror pruned changes it had not read (its cursor is 10, the oldest change kept is 12)',
    },
    {
      what: 'every change was pruned',
      p: { ...base, firstKept: undefined },
      reason: 'the mirror pruned changes it had not read (its cursor is 10, the oldest change kept is 13)',
    },
  ])('$what', ({ p, reason }) => {
    expect(loadReason(p)).toBe(reason)
  })
})
