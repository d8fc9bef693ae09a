// Query output waits for the reader: while stdout is full, no more rows are read from SQLite.
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { writeChunks } from '../../../src/cli/write-chunks.js'

test('a full output stream stops the rows being read until it drains', async () => {
  let pulled = 0
  function* rows(): Generator<string> {
    for (let i = 0; i < 100_000; i++) {
      pulled++
      yield `${'x'.repeat(99)}\n`
    }
  }
  const held: (() => void)[] = []
  let written = 0
  // A reader that takes each write only when the test lets it.
  const out = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, cb) {
      written += chunk.length
      held.push(cb)
    },
  })
  const done = writeChunks(out, rows())
  let finished = false
  void done.then(() => (finished = true))
  for (let turns = 0; !finished; turns++) {
    await new Promise((r) => setImmediate(r))
    if (held.length === 0) continue
    // Nothing is read more than one batch (64 KiB, about 660 rows here) ahead of what was taken.
    expect(pulled * 100 - written).toBeLessThanOrEqual(64 * 1024 + 100)
    held.shift()!()
  }
  await done
  expect(pulled).toBe(100_000)
  expect(written).toBe(100_000 * 100)
})

test('an output closed by its reader ends the write with its error, not a crash', async () => {
  const out = new Writable({ write: (_c, _e, cb) => cb(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })) })
  function* rows(): Generator<string> {
    for (;;) yield 'y'.repeat(1000)
  }
  await expect(writeChunks(out, rows())).rejects.toMatchObject({ code: 'EPIPE' })
})
