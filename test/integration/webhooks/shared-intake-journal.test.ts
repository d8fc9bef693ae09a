// The process's intake journal (src/webhooks/intake-journal.ts): deliveries of many accounts that
// arrive together share one commit and one sync before their acks, then each reaches its own
// account's inbox only; a delivery already relayed is a duplicate; an account over its backlog or
// closing is answered 503, and what it left waits in the journal for its next start.
import fs from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { systemClock } from '../../../src/model/clock.js'
import { WebhookInbox } from '../../../src/webhooks/inbox.js'
import { IntakeJournal } from '../../../src/webhooks/intake-journal.js'
import { FakeClock } from '../../support/fake-clock.js'
import { tempDir, tempMirror } from '../../support/temp-mirror.js'

const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
const delivery = (id: string) => ({ deliveryId: id, event: 'job.updated', body: Buffer.from(`{"id":"${id}"}`), verifiedWith: 'test' })

async function accounts(n: number, maxBacklog = 3) {
  const mirrors = await Promise.all(Array.from({ length: n }, () => tempMirror()))
  const inboxes = mirrors.map((m) => new WebhookInbox(m.sqlite, { now: () => Date.now(), maxBacklog, logger }))
  const ids = (i: number) => mirrors[i]!.sqlite.prepare('SELECT delivery_id FROM webhook_inbox ORDER BY seq').pluck().all()
  const dispose = async () => {
    for (const inbox of inboxes) await inbox.close()
    for (const m of mirrors) await m.dispose()
  }
  return { mirrors, inboxes, ids, dispose }
}

test('deliveries of three accounts in one turn: one journal commit and one sync before the acks; each in its own inbox after', async () => {
  const file = path.join(tempDir(), 'intake-journal.db')
  let syncs = 0
  const journal = new IntakeJournal({
    file,
    logger,
    clock: systemClock,
    syncFile: (fd, done) => {
      syncs++
      fs.fdatasync(fd, done)
    },
  })
  const a = await accounts(3)
  try {
    const ports = a.inboxes.map((inbox, i) => journal.attach(`acct-${i}`, inbox, 100))
    const acks = await Promise.all(ports.map((p, i) => p.enqueue(delivery(`d-${i}`))))
    expect(acks).toEqual(['stored', 'stored', 'stored'])
    expect(syncs).toBe(1)
    await Promise.all(ports.map((p) => p.relayed()))
    expect([0, 1, 2].map((i) => a.ids(i))).toEqual([['d-0'], ['d-1'], ['d-2']])
    expect(journal.size).toBe(0)
    // The same delivery again, once relayed: known, nothing stored twice; in another account, new.
    expect(await ports[0]!.enqueue(delivery('d-0'))).toBe('duplicate')
    expect(await ports[1]!.enqueue(delivery('d-0'))).toBe('stored')
    await ports[1]!.relayed()
    expect(a.ids(1)).toEqual(['d-1', 'd-0'])
  } finally {
    await a.dispose()
    await journal.close()
  }
})

test('a backlog at webhooks.maxBacklog and a closed account answer 503; what an account left is relayed when it attaches again', async () => {
  const file = path.join(tempDir(), 'intake-journal.db')
  const a = await accounts(1)
  let journal = new IntakeJournal({ file, logger, clock: systemClock, relayDelayMs: 3_600_000 })
  try {
    const port = journal.attach('acct-0', a.inboxes[0]!, 3)
    expect(await Promise.all(['x', 'y', 'z'].map((id) => port.enqueue(delivery(id))))).toEqual(['stored', 'stored', 'stored'])
    // Three in the journal, none applied yet: the account is at its bound of 3.
    await expect(port.enqueue(delivery('w'))).rejects.toMatchObject({ code: 'INBOX_BACKLOG_FULL' })
    // The inbox closes with the account (a daemon stopping before the relay): they stay in the journal.
    await a.inboxes[0]!.close()
    await port.close()
    await expect(port.enqueue(delivery('v'))).rejects.toMatchObject({ code: 'INBOX_CLOSED' })
    expect(a.ids(0)).toEqual([])
    await journal.close()
    journal = new IntakeJournal({ file, logger, clock: systemClock })
    expect(journal.size).toBe(3)
    const inbox = new WebhookInbox(a.mirrors[0]!.sqlite, { now: () => Date.now(), maxBacklog: 3, logger })
    const again = journal.attach('acct-0', inbox, 3)
    await again.relayed()
    expect(a.ids(0)).toEqual(['x', 'y', 'z'])
    expect(journal.size).toBe(0)
    await inbox.close()
  } finally {
    await a.dispose()
    await journal.close()
  }
})

test('a relay while the next group waits for its sync takes only what is on disk, and that group follows once synced', async () => {
  const file = path.join(tempDir(), 'intake-journal.db')
  const held: (() => void)[] = []
  let hold = false
  const journal = new IntakeJournal({
    file,
    logger,
    clock: systemClock,
    relayDelayMs: 30,
    syncFile: (fd, done) => (hold ? held.push(() => fs.fdatasync(fd, done)) : fs.fdatasync(fd, done)),
  })
  const a = await accounts(1)
  try {
    const port = journal.attach('acct-0', a.inboxes[0]!, 100)
    expect(await port.enqueue(delivery('first'))).toBe('stored')
    // The relay of `first` is due in 30 ms; `second` is committed meanwhile, its sync held past that.
    hold = true
    const second = port.enqueue(delivery('second'))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(held).toHaveLength(1)
    expect(a.ids(0)).toEqual(['first'])
    hold = false
    for (const release of held.splice(0)) release()
    expect(await second).toBe('stored')
    await port.relayed()
    expect(a.ids(0)).toEqual(['first', 'second'])
    expect(journal.size).toBe(0)
  } finally {
    await a.dispose()
    await journal.close()
  }
})

test("the journal keeps the inbox's safeguards: a sync that never returns is answered 503 at close's deadline, and its commits are counted", async () => {
  const file = path.join(tempDir(), 'intake-journal.db')
  const metrics = { groupCommits: 0, groupedDeliveries: 0, commitMicros: 0, walSyncMicros: 0 }
  let hang = false
  const journal = new IntakeJournal({
    file,
    logger,
    clock: systemClock,
    metrics,
    closeTimeoutMs: 50,
    syncFile: (fd, done) => (hang ? undefined : fs.fdatasync(fd, done)),
  })
  const a = await accounts(1)
  try {
    const port = journal.attach('acct-0', a.inboxes[0]!, 100)
    expect(await Promise.all([port.enqueue(delivery('a')), port.enqueue(delivery('b'))])).toEqual(['stored', 'stored'])
    expect(metrics).toMatchObject({ groupCommits: 1, groupedDeliveries: 2 })
    await port.relayed()
    hang = true
    const stuck = port.enqueue(delivery('c'))
    await journal.close()
    await expect(stuck).rejects.toMatchObject({ code: 'INBOX_WRITE_FAILED' })
  } finally {
    await a.dispose()
  }
})

test('acks come first: while the intake stores more than 200 deliveries a second, relays start 40 ms apart, not 10; after it, 10 again', async () => {
  const file = path.join(tempDir(), 'intake-journal.db')
  const clock = new FakeClock(Date.UTC(2026, 0, 1))
  const relays: number[] = []
  const journal = new IntakeJournal({ file, logger, clock, afterInboxCommit: () => (relays.push(clock.now()), Promise.resolve()) })
  const a = await accounts(30, 100)
  /** Fake time forward in 5 ms steps, the real I/O of the relays let through between them. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 5) {
      await clock.advance(5)
      await new Promise((r) => setTimeout(r, 15))
    }
  }
  try {
    const ports = a.inboxes.map((inbox, i) => journal.attach(`acct-${i}`, inbox, 100))
    // A burst: 240 deliveries over 30 accounts in one turn, one group commit.
    await Promise.all(Array.from({ length: 240 }, (_, i) => ports[i % 30]!.enqueue(delivery(`burst-${i}`))))
    const start = clock.now()
    await run(200)
    const during = relays.filter((at) => at - start < 200)
    // Starts 40 ms apart, two in flight at most: about 5 (10 ms apart would be about 20).
    expect(during.length).toBeGreaterThan(0)
    expect(during.length).toBeLessThanOrEqual(7)
    // The burst over (a second without one): each account relayed, 10 ms apart again.
    await run(1_500)
    await Promise.all(ports.map((p) => p.relayed()))
    expect(journal.size).toBe(0)
    const quietFrom = clock.now()
    relays.length = 0
    await Promise.all(ports.slice(0, 6).map((p, i) => p.enqueue(delivery(`quiet-${i}`))))
    await run(60)
    expect(relays.filter((at) => at - quietFrom < 60).length).toBe(6)
  } finally {
    await a.dispose()
    await journal.close()
  }
}, 60_000)
