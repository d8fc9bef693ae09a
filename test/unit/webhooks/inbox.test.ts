// The inbox's group commit against a real mirror file: a delivery is answered only after the -wal
// file holding its commit is synced, deliveries arriving during a sync form the next group, a failed
// sync answers 503 from then on, and close() drains. The sync itself is the real fs.fdatasync; the
// tests only hold it (to see what waits meanwhile) or fail it (a disk error cannot be produced here).
import fs from 'node:fs'
import { Writable } from 'node:stream'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { InboxUnavailableError, WebhookInbox, type Delivery, type EnqueueResult, type SyncFile } from '../../../src/webhooks/inbox.js'
import { WebhookMetrics } from '../../../src/webhooks/metrics.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'
import { track } from '../../support/track-settled.js'

interface HeldSync {
  fd: number
  /** Really syncs now; resolves once the inbox's callback has run. */
  release(): Promise<void>
  fail(err: Error): void
}

/** A SyncFile that waits for the test to release (really syncing then) or fail each call. */
function heldSyncs(): { syncFile: SyncFile; next(): Promise<HeldSync>; calls: () => number } {
  const waiting: HeldSync[] = []
  const takers: ((s: HeldSync) => void)[] = []
  let calls = 0
  const syncFile: SyncFile = (fd, done) => {
    calls++
    const held: HeldSync = {
      fd,
      release: () => new Promise<void>((resolve) => fs.fdatasync(fd, (err) => (done(err), resolve()))),
      fail: (err) => done(err),
    }
    const taker = takers.shift()
    if (taker) taker(held)
    else waiting.push(held)
  }
  return {
    syncFile,
    next: () => {
      const held = waiting.shift()
      return held ? Promise.resolve(held) : new Promise((resolve) => takers.push(resolve))
    },
    calls: () => calls,
  }
}

const delivery = (id: string): Delivery => ({
  deliveryId: id,
  event: 'job.updated',
  body: Buffer.from(JSON.stringify({ id })),
  verifiedWith: 'test',
})

/** Lets pending immediates and I/O callbacks run (a few event-loop turns). */
const turns = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

let mirror: TempMirror
let lines: string[]
const logger = () =>
  createLogger({ level: 'debug', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }) })
const count = () => mirror.sqlite.prepare('SELECT count(*) FROM webhook_inbox').pluck().get() as number

beforeEach(async () => {
  mirror = await tempMirror()
  lines = []
})
afterEach(async () => {
  await mirror.dispose()
})

describe('acknowledged means synced', () => {
  test('a delivery resolves only once the -wal file holding its commit is synced, and then wakes the processor', async () => {
    const syncs = heldSyncs()
    let woken = 0
    const inbox = new WebhookInbox(mirror.sqlite, {
      now: Date.now,
      maxBacklog: 100,
      logger: logger(),
      syncFile: syncs.syncFile,
      onStored: () => woken++,
    })
    const a = track(inbox.enqueue(delivery('a')))
    const held = await syncs.next()
    // Committed (visible on the connection) but not acknowledged, and not applied yet.
    expect(count()).toBe(1)
    await turns()
    expect(a.settled()).toBe(false)
    expect(woken).toBe(0)
    // The descriptor synced is the mirror's -wal file.
    expect(fs.fstatSync(held.fd).ino).toBe(fs.statSync(`${mirror.path}-wal`).ino)
    await held.release()
    await expect(a.value).resolves.toBe('stored' satisfies EnqueueResult)
    expect(woken).toBe(1)
    expect(inbox.backlog).toBe(1)
    await inbox.close()
  })

  test('deliveries arriving during a sync wait, then go in one commit and one sync', async () => {
    const syncs = heldSyncs()
    const metrics = new WebhookMetrics()
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 100, logger: logger(), syncFile: syncs.syncFile, metrics })
    const a = track(inbox.enqueue(delivery('a')))
    const first = await syncs.next()
    const later = ['b', 'c', 'd'].map((id) => track(inbox.enqueue(delivery(id))))
    const dup = track(inbox.enqueue(delivery('a')))
    await turns()
    // Nothing else is committed or synced while the first sync is in flight.
    expect(syncs.calls()).toBe(1)
    expect(count()).toBe(1)
    await first.release()
    await expect(a.value).resolves.toBe('stored')
    const second = await syncs.next()
    expect(count()).toBe(4)
    expect(later.some((t) => t.settled()) || dup.settled()).toBe(false)
    await second.release()
    expect(await Promise.all(later.map((t) => t.value))).toEqual(['stored', 'stored', 'stored'])
    await expect(dup.value).resolves.toBe('duplicate')
    expect(syncs.calls()).toBe(2)
    expect({ groups: metrics.intake.groupCommits, deliveries: metrics.intake.groupedDeliveries }).toEqual({ groups: 2, deliveries: 5 })
    // What the processor reads to tell that deliveries are arriving.
    expect(inbox.commits).toBe(2)
    expect(mirror.sqlite.prepare('SELECT delivery_id FROM webhook_inbox ORDER BY seq').pluck().all()).toEqual(['a', 'b', 'c', 'd'])
    await inbox.close()
  })

  test('a failed sync answers 503 to its group, to those waiting and to every later delivery, and says so', async () => {
    const syncs = heldSyncs()
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 100, logger: logger(), syncFile: syncs.syncFile })
    const a = track(inbox.enqueue(delivery('a')))
    const held = await syncs.next()
    const b = track(inbox.enqueue(delivery('b')))
    held.fail(Object.assign(new Error('EIO: i/o error, fdatasync (simulated)'), { code: 'EIO' }))
    for (const t of [a, b]) await expect(t.value).rejects.toMatchObject({ name: 'InboxUnavailableError', code: 'INBOX_WRITE_FAILED' })
    const c = inbox.enqueue(delivery('c'))
    await expect(c).rejects.toBeInstanceOf(InboxUnavailableError)
    await expect(c).rejects.toThrow(/restart the daemon/)
    expect(syncs.calls()).toBe(1)
    expect(lines.join('')).toMatch(/syncing the webhook inbox log to disk failed: answering 503/)
    await inbox.close()
  })
})

describe('close', () => {
  test('waits for the sync in flight and commits what waits; later deliveries are refused', async () => {
    const syncs = heldSyncs()
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 100, logger: logger(), syncFile: syncs.syncFile })
    const a = track(inbox.enqueue(delivery('a')))
    const first = await syncs.next()
    const b = track(inbox.enqueue(delivery('b')))
    const closed = track(inbox.close())
    await expect(inbox.enqueue(delivery('c'))).rejects.toMatchObject({ code: 'INBOX_CLOSED' })
    await turns()
    expect(closed.settled()).toBe(false)
    await first.release()
    await (await syncs.next()).release()
    await closed.value
    expect([await a.value, await b.value]).toEqual(['stored', 'stored'])
    expect(mirror.sqlite.prepare('SELECT delivery_id FROM webhook_inbox ORDER BY seq').pluck().all()).toEqual(['a', 'b'])
  })
})

describe('close with a sync that never returns', () => {
  test('answers 503 to the group in flight and those waiting after the deadline, and says why', async () => {
    const syncs = heldSyncs()
    const metrics = new WebhookMetrics()
    let woken = 0
    const inbox = new WebhookInbox(mirror.sqlite, {
      now: Date.now,
      maxBacklog: 100,
      logger: logger(),
      syncFile: syncs.syncFile,
      closeTimeoutMs: 50,
      metrics,
      onStored: () => woken++,
    })
    const a = track(inbox.enqueue(delivery('a')))
    const stuck = await syncs.next()
    const b = track(inbox.enqueue(delivery('b')))
    expect(inbox.abandoned).toBe(false)
    await inbox.close()
    expect(inbox.abandoned).toBe(true)
    for (const t of [a, b]) await expect(t.value).rejects.toMatchObject({ name: 'InboxUnavailableError', code: 'INBOX_WRITE_FAILED' })
    await expect(a.value).rejects.toThrow(/did not return within 50 ms/)
    expect(lines.join('')).toMatch(/still in flight \(the disk is not answering\): answering 503/)
    // The disk answers at last: nothing is answered twice, and the inbox stays closed.
    await stuck.release()
    await turns()
    expect(syncs.calls()).toBe(1)
    // Not treated as durable after all: no wake-up of the processor, no group commit counted.
    expect(woken).toBe(0)
    expect(metrics.intake.groupCommits).toBe(0)
    await expect(inbox.enqueue(delivery('c'))).rejects.toMatchObject({ code: 'INBOX_CLOSED' })
  })
})

describe('without a -wal file', () => {
  test('a database not in WAL mode commits with synchronous=FULL and restores the setting', async () => {
    mirror.sqlite.pragma('journal_mode = DELETE')
    const syncs = heldSyncs()
    const before = mirror.sqlite.pragma('synchronous', { simple: true })
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 100, logger: logger(), syncFile: syncs.syncFile })
    await expect(inbox.enqueue(delivery('a'))).resolves.toBe('stored')
    expect(syncs.calls()).toBe(0)
    expect(mirror.sqlite.pragma('synchronous', { simple: true })).toBe(before)
    await inbox.close()
  })
})

describe('the -wal file synced is the one SQLite writes', () => {
  // Review finding (2026-11-23): the path was built from the name the mirror was opened with, but
  // SQLite resolves symlinks; a stale -wal beside the link would have been synced instead.
  test('a mirror opened through a symlink: the descriptor synced is the -wal beside the real file', async () => {
    const { openMirror } = await import('../../../src/store/sqlite/mirror-database.js')
    const path = await import('node:path')
    const real = path.join(mirror.dir, 'real')
    const linked = path.join(mirror.dir, 'linked')
    fs.mkdirSync(real)
    fs.mkdirSync(linked)
    const target = path.join(real, 'mirror.db')
    const link = path.join(linked, 'mirror.db')
    const opened = await openMirror(target)
    await opened.close()
    fs.symlinkSync(target, link)
    // A stale -wal beside the link, as a move-then-symlink could leave behind.
    fs.writeFileSync(`${link}-wal`, '')
    const viaLink = await openMirror(link)
    try {
      const synced: number[] = []
      const inbox = new WebhookInbox(viaLink.sqlite, {
        now: Date.now,
        maxBacklog: 100,
        logger: logger(),
        // The descriptor is closed after its sync: its file is read while it is open.
        syncFile: (fd, done) => (synced.push(fs.fstatSync(fd).ino), fs.fdatasync(fd, done)),
      })
      expect(await inbox.enqueue(delivery('symlinked'))).toBe('stored')
      expect(synced).toEqual([fs.statSync(`${target}-wal`).ino])
      await inbox.close()
    } finally {
      await viaLink.close()
    }
  })
})
