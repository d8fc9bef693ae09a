// A stored cursor is parsed with the schema of its kind; what does not parse is reported with what
// was wrong, never thrown.
import { describe, expect, test } from 'vitest'
import type { z } from 'zod'
import { KeysetCursorSchema } from '../../../src/api/keyset/index.js'
import { FeedCursorSchema } from '../../../src/sync/calendar-feed.js'
import { parseStoredCursor } from '../../../src/store/repositories/stored-cursor.js'
import { ObjectCursorSchema } from '../../../src/sync/custom-object-sync.js'

describe('parseStoredCursor', () => {
  test('no row yet: no cursor, nothing wrong', () => {
    expect(parseStoredCursor(null, KeysetCursorSchema)).toEqual({ ok: true, cursor: undefined })
  })

  test.each<[string, z.ZodType, string]>([
    ['keyset', KeysetCursorSchema, '{"since":"2026-01-05T10:00:00.000Z","seenIdsAtCursor":["a"]}'],
    ['object, between walks', ObjectCursorSchema, '{"updatedSince":"2026-01-05T10:00:00.000Z"}'],
    ['object, mid-walk', ObjectCursorSchema, '{"next":"abc","bookmark":"2026-01-05T10:00:00.000Z"}'],
    ['object, first walk', ObjectCursorSchema, '{}'],
    ['feed', FeedCursorSchema, '{"since":"2026-01-05T10:00:00.000Z"}'],
  ])('a good %s cursor parses to what was stored', (_kind, schema, text) => {
    expect(parseStoredCursor(text, schema)).toEqual({ ok: true, cursor: JSON.parse(text) })
  })

  test.each<[string, z.ZodType, string, RegExp]>([
    ['not JSON', KeysetCursorSchema, 'not json {', /^not JSON \(/],
    ['JSON of the wrong shape', KeysetCursorSchema, '{"cursor":42}', /^since: .*; seenIdsAtCursor: /],
    ['a bare string (an older shape)', KeysetCursorSchema, '"2026-01-01T00:00:00.000Z"', /^the cursor: /],
    ['a time that is not a time', KeysetCursorSchema, '{"since":"yesterday","seenIdsAtCursor":[]}', /^since: not a time$/],
    ['an object walk without its bookmark', ObjectCursorSchema, '{"next":"abc"}', /^bookmark: a walk under way/],
    ['an object bookmark that is not a time', ObjectCursorSchema, '{"updatedSince":"soon"}', /^updatedSince: not a time$/],
    ['a feed point that is not a time', FeedCursorSchema, '{"since":""}', /^since: not a time$/],
  ])('%s is reported, not thrown', (_what, schema, text, problem) => {
    const read = parseStoredCursor(text, schema)
    expect(read.ok).toBe(false)
    if (!read.ok) expect(read.problem).toMatch(problem)
  })
})
