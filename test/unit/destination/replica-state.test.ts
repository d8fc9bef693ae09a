// The replica's written state, as the state row's columns hold it.
import { describe, expect, test } from 'vitest'
import { fingerprintsJson, parseWritten } from '../../../src/destination/replica-state.js'

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
