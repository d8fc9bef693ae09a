// The one conversion every export format starts from: a mirror value as its column's kind, and the
// values that do not fit written as NULL and counted.
import { expect, test } from 'vitest'
import { typed, type Coercions } from '../../../src/export/values.js'

test('values take their kind; what does not fit becomes NULL and is counted', () => {
  const c: Coercions = { count: 0 }
  expect(typed('time', '2026-01-02T03:04:05.000Z', c)).toEqual({
    kind: 'time',
    value: '2026-01-02T03:04:05.000Z',
    micros: BigInt(Date.UTC(2026, 0, 2, 3, 4, 5)) * 1000n,
  })
  expect(typed('flag', 1n, c)).toEqual({ kind: 'flag', value: true })
  expect(typed('integer', 2n ** 60n, c)).toEqual({ kind: 'integer', value: 2n ** 60n })
  expect(typed('text', 42n, c)).toEqual({ kind: 'text', value: '42' })
  expect(typed('json', '{\n  "a": 1\n}', c)).toEqual({ kind: 'json', value: '{"a":1}' })
  expect(typed('text', null, c)).toBeNull()
  expect(c.count).toBe(0)
  // '' is the mirror's own "no time" (an API key's updated_at: upstream gives none): NULL, no misfit.
  expect(typed('time', '', c)).toBeNull()
  expect(c).toEqual({ count: 0 })
  // Text that is no instant, JSON that is not JSON, a flag of 2: the first is kept as the example.
  for (const [kind, value] of [
    ['time', 'next Tuesday'],
    ['json', '{oops'],
    ['flag', 2n],
  ] as const)
    expect(typed(kind, value, c)).toBeNull()
  expect(c).toEqual({ count: 3, example: '"next Tuesday"' })
  const long: Coercions = { count: 0 }
  typed('time', 'x'.repeat(100), long)
  expect(long.example).toBe(`"${'x'.repeat(39)}…"`)
})
