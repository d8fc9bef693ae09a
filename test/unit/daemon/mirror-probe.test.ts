// The readiness probe on a real mirror file: the room it requires is the intake's body cap as
// configured (not a fixed 1 MiB), and the busy timeout it lowers for its write is put back to the
// connection's own value.
import path from 'node:path'
import { expect, test } from 'vitest'
import { probeMirror } from '../../../src/daemon/mirror-probe.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { tempDir } from '../../support/temp-mirror.js'

const MIB = 1024 * 1024

test('the probe requires room for one delivery at the configured webhooks.maxBodyBytes, not a fixed 1 MiB', async () => {
  const mirror = await openMirror(path.join(tempDir(), 'mirror.db'))
  try {
    const pageSize = mirror.sqlite.pragma('page_size', { simple: true }) as number
    const pageCount = mirror.sqlite.pragma('page_count', { simple: true }) as number
    // Room for about 2 MiB more under max_page_count.
    mirror.sqlite.pragma(`max_page_count = ${pageCount + (2 * MIB) / pageSize}`)
    expect(await probeMirror(mirror.sqlite, 1 * MIB)).toMatchObject({ ok: true })
    const tight = await probeMirror(mirror.sqlite, 4 * MIB)
    expect(tight).toMatchObject({ ok: false })
    expect(tight.ok ? '' : tight.reason).toMatch(/^the mirror is full/)
  } finally {
    await mirror.close()
  }
})

test("the probe puts back the connection's own busy timeout, not a fixed 5000 ms", async () => {
  const mirror = await openMirror(path.join(tempDir(), 'mirror.db'), { busyTimeoutMs: 1234 })
  try {
    expect(await probeMirror(mirror.sqlite, MIB)).toMatchObject({ ok: true })
    expect(mirror.sqlite.pragma('busy_timeout', { simple: true })).toBe(1234)
  } finally {
    await mirror.close()
  }
})
