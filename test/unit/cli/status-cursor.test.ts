// `status` shows each stream's cursor as a person reads it, whatever its shape: never JSON cut off.
import { expect, test } from 'vitest'
import { cursorText } from '../../../src/cli/status.js'

test.each([
  ['no cursor', null, ''],
  [
    'a keyset',
    '{"since":"2026-01-03T00:00:00.000Z","seenIdsAtCursor":["a","b"],"rereadFrom":"2026-01-02T23:59:30.000Z"}',
    'since 2026-01-03T00:00:00Z',
  ],
  ['a custom object between walks', '{"updatedSince":"2026-01-02T10:00:00.250Z"}', 'since 2026-01-02T10:00:00.250Z'],
  [
    'a custom object mid-walk',
    `{"updatedSince":"2026-01-02T10:00:00.000Z","next":"${'c'.repeat(80)}","bookmark":"2026-01-03T00:00:00.000Z"}`,
    'walk under way, since 2026-01-02T10:00:00Z',
  ],
  ['a custom object on its first walk', `{"next":"${'c'.repeat(80)}","bookmark":"2026-01-03T00:00:00.000Z"}`, 'first walk under way'],
  ['an empty object', '{}', ''],
  ['another object: its scalar fields', '{"page":3,"done":false,"ids":["x"]}', 'page 3, done false'],
  ['a long other object: cut with an ellipsis', `{"token":"${'t'.repeat(80)}"}`, `token ${'t'.repeat(33)}…`],
  ['not JSON', 'opaque-cursor', 'opaque-cursor'],
])('%s', (_name, cursor, text) => {
  expect(cursorText(cursor)).toBe(text)
})
