// The runner table (src/sync/stream-runners.ts) is the one place a run of each stream kind starts:
// every kind the registry declares has its entry, and no entry names a kind the registry lacks.
import { describe, expect, test } from 'vitest'
import { STREAMS } from '../../../connectors/index.js'
import { RUNNERS } from '../../../src/sync/stream-runners.js'

describe('stream runners', () => {
  test('one entry per stream kind of the registry', () => {
    expect(Object.keys(RUNNERS).sort()).toEqual([...new Set(STREAMS.map((s) => s.kind))].sort())
  })
})
