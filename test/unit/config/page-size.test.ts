// `sync.pageSize` below 5 is refused: a sweep steps through rows sharing an updatedAt with pages that
// overlap the last row read (src/api/keyset/next-step.ts, nextStep), so a page of one row would bring
// nothing new on every request and a page of two would stall on a tie of three rows.
import { expect, test } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/config/index.js'
import { nextStep } from '../../../src/api/keyset/next-step.js'

test('sync.pageSize under 5 is a configuration error saying why; 5 passes', () => {
  for (const pageSize of [1, 2, 4]) {
    let error: unknown
    try {
      loadConfig({ overrides: { sync: { pageSize } } })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      { key: 'sync.pageSize', message: expect.stringMatching(/^must be a whole number from 5 to 100: .*overlap the last row read/) },
    ])
  }
  expect(loadConfig({ overrides: { sync: { pageSize: 5 } } }).sync.pageSize).toBe(5)
})

test('at the smallest page size, every step through a tie brings at least one new row', () => {
  for (let read = 0; read < 50; read++) {
    const step = nextStep(read, 5)
    const fresh = step.offset + step.limit - read
    expect(fresh, `after ${read} rows`).toBeGreaterThanOrEqual(1)
  }
})
