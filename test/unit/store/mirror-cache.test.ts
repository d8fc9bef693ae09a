// Each connection to a mirror has a bounded page cache of its own, so a process holding many
// mirrors open stays within a known memory (src/store/README.md, "What an open mirror costs").
import { afterEach, expect, test } from 'vitest'
import { openMirror, READER_CACHE_KIB, WRITER_CACHE_KIB } from '../../../src/store/sqlite/mirror-database.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
afterEach(async () => {
  await mirror?.dispose()
  mirror = undefined
})

test('the writer and a reader have the page caches the docs give, a few MiB each', async () => {
  mirror = await tempMirror()
  // Negative: KiB, not pages.
  expect(mirror.sqlite.pragma('cache_size', { simple: true })).toBe(-WRITER_CACHE_KIB)
  const reader = await openMirror(mirror.path, { readonly: true })
  try {
    expect(reader.sqlite.pragma('cache_size', { simple: true })).toBe(-READER_CACHE_KIB)
  } finally {
    await reader.close()
  }
  expect(WRITER_CACHE_KIB).toBeLessThanOrEqual(8 * 1024)
  expect(READER_CACHE_KIB).toBeLessThanOrEqual(WRITER_CACHE_KIB)
})
