// The mirror itself failing under the daemon (a full disk, here SQLite's max_page_count on the
// writer connection, which fails writes with SQLITE_FULL the way a full disk does): /readyz must
// say so, and the processor must record it, back off and resume, losing nothing it acknowledged.
import { createRequire } from 'node:module'
import path from 'node:path'
import { Writable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, test } from 'vitest'
import { probeMirror } from '../../../src/daemon/mirror-probe.js'
import { createLogger } from '../../../src/log/logger.js'
import { systemClock } from '../../../src/model/clock.js'
import { MIRROR_FAULT_PREFIX, WebhookInbox } from '../../../src/webhooks/inbox.js'
import { WebhookProcessor } from '../../../src/webhooks/processor.js'
import { FakeClock } from '../../support/fake-clock.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'
import { T, hex, jobPayload, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'

let env: WebhookEnv | undefined
let mirror: TempMirror | undefined
afterEach(async () => {
  await env?.close()
  await mirror?.dispose()
  env = undefined
  mirror = undefined
})

/** Caps the mirror at the pages it has now: the next write that needs a page fails with SQLITE_FULL. */
function fill(m: TempMirror): void {
  const pages = m.sqlite.pragma('page_count', { simple: true }) as number
  m.sqlite.pragma(`max_page_count = ${pages}`)
}
const unfill = (m: TempMirror) => m.sqlite.pragma('max_page_count = 4294967294')

/** Polls every millisecond (the back-off steps here last 20-320 ms); gives up after `limitMs`. */
async function until<T>(what: string, probe: () => T | undefined | false, limitMs: number): Promise<T> {
  const end = Date.now() + limitMs
  for (;;) {
    const v = probe()
    if (v !== undefined && v !== false) return v
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 1))
  }
}

const bulky = (i: number) => jobPayload(hex(i), T(i), { notes: 'x'.repeat(2000) })

describe('/readyz says ready when the mirror cannot be written', () => {
  test('the probe writes and syncs a row, and reports a full mirror while deliveries get 503', async () => {
    env = await webhookEnv()
    expect(await probeMirror(env.mirror.sqlite, 1 << 20)).toMatchObject({ ok: true })
    expect(env.rows('SELECT id FROM mirror_probe')).toEqual([{ id: 1 }])
    fill(env.mirror)
    let refused = 0
    for (let i = 1; i <= 50 && refused === 0; i++) if ((await env.deliver(`d${i}`, 'job.updated', bulky(i))).status === 503) refused++
    expect(refused).toBe(1)
    const probe = await probeMirror(env.mirror.sqlite, 1 << 20)
    expect(probe).toMatchObject({ ok: false })
    expect(probe.ok ? '' : probe.reason).toContain('the mirror is full')
    unfill(env.mirror)
    expect(await probeMirror(env.mirror.sqlite, 1 << 20)).toMatchObject({ ok: true })
    expect((await env.deliver('after', 'job.updated', bulky(99))).status).toBe(200)
  })
})

describe('a processor that meets a failing mirror records the error on the delivery and backs off', () => {
  test('no stack trace per try, one log line per back-off step, and everything acknowledged is applied once the mirror works again', async () => {
    mirror = await tempMirror()
    const lines: string[] = []
    const logger = createLogger({
      level: 'info',
      destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }),
    })
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger, onStored: () => processor.wake() })
    const processor = new WebhookProcessor({
      sqlite: mirror.sqlite,
      inbox,
      logger,
      clock: systemClock,
      storeRetryMs: 20,
      storeRetryMaxMs: 320,
    })
    // Stored (acknowledged) before applying starts; applying them needs pages the mirror no longer has.
    for (let i = 1; i <= 20; i++)
      expect(
        await inbox.enqueue({
          deliveryId: `d${i}`,
          event: 'job.updated',
          body: Buffer.from(JSON.stringify(bulky(i))),
          verifiedWith: 'test',
        }),
      ).toBe('stored')
    fill(mirror)
    processor.start()
    const failing = await until('four failed tries', () => (processor.fault?.attempts === 4 ? processor.fault : undefined), 10_000)
    expect(failing.error).toContain('the mirror is full')
    // Each stored delivery wakes the processor (the inbox's onStored): that must not be a try.
    const tries = failing.attempts
    for (let i = 0; i < 5; i++) processor.wake()
    await new Promise((r) => setTimeout(r, 30))
    expect(processor.fault?.attempts).toBe(tries)
    const head = mirror.sqlite.prepare(`SELECT delivery_id, error FROM webhook_inbox WHERE error IS NOT NULL`).all() as {
      delivery_id: string
      error: string
    }[]
    expect(head).toHaveLength(1)
    expect(head[0]!.delivery_id).toBe('d1')
    expect(head[0]!.error.startsWith(MIRROR_FAULT_PREFIX)).toBe(true)
    const failures = lines.filter((l) => l.includes('applying webhook deliveries failed'))
    expect(failures.length).toBe(processor.fault?.attempts)
    expect(lines.join('')).not.toContain('"stack"')
    // The waits double from storeRetryMs: 20, 40, 80, 160 ms (then 320, the cap).
    expect(failures.map((l) => (JSON.parse(l) as { retryInMs: number }).retryInMs).slice(0, 4)).toEqual([20, 40, 80, 160])
    expect(mirror.sqlite.prepare('SELECT count(*) FROM jobs').pluck().get()).toBe(0)

    unfill(mirror)
    await until(
      'every delivery applied',
      () => (mirror!.sqlite.prepare('SELECT count(*) FROM jobs').pluck().get() as number) === 20,
      10_000,
    )
    expect(processor.fault).toBeUndefined()
    expect(mirror.sqlite.prepare(`SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL OR error IS NOT NULL`).pluck().get()).toBe(
      0,
    )
    expect(inbox.backlog).toBe(0)
    expect(lines.some((l) => l.includes('applying webhook deliveries works again'))).toBe(true)
    await processor.stop()
    await inbox.close()
  })

  test('a delivery kept with a mirror fault by a process that stopped is applied by the next one', async () => {
    mirror = await tempMirror()
    const logger = createLogger({ level: 'silent' })
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger })
    await inbox.enqueue({
      deliveryId: 'd1',
      event: 'job.updated',
      body: Buffer.from(JSON.stringify(jobPayload(hex(1), T(1)))),
      verifiedWith: 'test',
    })
    inbox.markFault('d1', 'the mirror is full')
    await inbox.close()
    const next = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger })
    const processor = new WebhookProcessor({ sqlite: mirror.sqlite, inbox: next, logger, clock: systemClock })
    processor.start()
    await processor.drained()
    expect(mirror.sqlite.prepare('SELECT processed_at IS NOT NULL AS done, error FROM webhook_inbox').all()).toEqual([
      { done: 1, error: null },
    ])
    await processor.stop()
    await next.close()
  })

  test('a delivery kept with a mirror fault is put back in line even when the mirror still fails at the next start', async () => {
    mirror = await tempMirror()
    const logger = createLogger({ level: 'silent' })
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger })
    const body = (s: number) => Buffer.from(JSON.stringify(jobPayload(hex(1), T(s))))
    await inbox.enqueue({ deliveryId: 'd1', event: 'job.updated', body: body(1), verifiedWith: 'test' })
    inbox.markFault('d1', 'the mirror is full')
    await inbox.enqueue({ deliveryId: 'd2', event: 'job.updated', body: body(2), verifiedWith: 'test' })
    await inbox.close()
    const next = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger })
    const processor = new WebhookProcessor({
      sqlite: mirror.sqlite,
      inbox: next,
      logger,
      clock: systemClock,
      storeRetryMs: 10,
      storeRetryMaxMs: 20,
    })
    // The mirror refuses every write at start (SQLITE_READONLY), then works again.
    mirror.sqlite.pragma('query_only = ON')
    processor.start()
    await until('the first failed try', () => processor.fault, 10_000)
    mirror.sqlite.pragma('query_only = OFF')
    await until(
      'the later delivery applied',
      () => mirror!.sqlite.prepare(`SELECT processed_at IS NOT NULL FROM webhook_inbox WHERE delivery_id = 'd2'`).pluck().get() === 1,
      10_000,
    )
    await processor.drained()
    // Both applied, in receipt order: the earlier one is not skipped behind the later one.
    const rows = mirror.sqlite.prepare('SELECT delivery_id, error, processed_at FROM webhook_inbox ORDER BY seq').all() as {
      delivery_id: string
      error: string | null
      processed_at: string | null
    }[]
    expect(rows.map((r) => [r.delivery_id, r.error, r.processed_at !== null])).toEqual([
      ['d1', null, true],
      ['d2', null, true],
    ])
    expect(rows[0]!.processed_at! <= rows[1]!.processed_at!).toBe(true)
    expect(processor.fault).toBeUndefined()
    await processor.stop()
    await next.close()
  })
})

/**
 * Another connection (a thread here, standing in for a cron `fsm-sync sync`) takes the mirror's
 * write lock, then lets it go after `holdMs`; resolves once the lock is held.
 */
async function holdWriteLock(file: string, holdMs: number): Promise<Worker> {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads')
     const db = new (require(workerData.driver))(workerData.file)
     db.exec('BEGIN IMMEDIATE')
     parentPort.postMessage('locked')
     setTimeout(() => { db.exec('COMMIT'); db.close(); parentPort.postMessage('released') }, workerData.holdMs)`,
    { eval: true, workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), file, holdMs } },
  )
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve())
    worker.once('error', reject)
  })
  return worker
}

describe("the processor's back-off waits on the injected clock", () => {
  test('no try before retryInMs of the clock has passed, one as soon as it has; stop disarms the next', async () => {
    mirror = await tempMirror()
    const clock = new FakeClock()
    const logger = createLogger({ level: 'silent' })
    const inbox = new WebhookInbox(mirror.sqlite, { now: () => clock.now(), maxBacklog: 100, logger })
    const processor = new WebhookProcessor({ sqlite: mirror.sqlite, inbox, logger, clock, gatherMs: 0, storeRetryMs: 1_000 })
    expect(
      await inbox.enqueue({ deliveryId: 'd1', event: 'job.updated', body: Buffer.from(JSON.stringify(bulky(1))), verifiedWith: 'test' }),
    ).toBe('stored')
    fill(mirror)
    processor.start()
    await until('the first failed try', () => processor.fault?.attempts === 1, 10_000)
    expect(processor.fault?.since).toBe(new Date(clock.now()).toISOString())
    for (const [attempt, wait] of [
      [2, 1_000],
      [3, 2_000],
      [4, 4_000],
    ] as const) {
      await clock.advance(wait - 1)
      // Real time passes too: the only timer left to bring the next try is the clock's.
      await new Promise((r) => setTimeout(r, 20))
      expect(processor.fault?.attempts).toBe(attempt - 1)
      await clock.advance(1)
      await until(`try ${attempt}`, () => processor.fault?.attempts === attempt, 10_000)
    }
    expect(clock.pending).toBe(1)
    await processor.stop()
    expect(clock.pending).toBe(0)
    await inbox.close()
  })
})

describe('a processor that finds the mirror locked by another process keeps the delivery pending', () => {
  test('a lock held past the busy timeout and released while the row is being marked does not fail the delivery for good', async () => {
    mirror = await tempMirror()
    const logger = createLogger({ level: 'silent' })
    const inbox = new WebhookInbox(mirror.sqlite, { now: Date.now, maxBacklog: 10_000, logger })
    const processor = new WebhookProcessor({
      sqlite: mirror.sqlite,
      inbox,
      logger,
      clock: systemClock,
      gatherMs: 0,
      storeRetryMs: 10,
      storeRetryMaxMs: 20,
    })
    processor.start()
    await processor.drained()
    // Stored without waking the processor: it is woken below, once the lock is held.
    await inbox.enqueue({
      deliveryId: 'd1',
      event: 'job.updated',
      body: Buffer.from(JSON.stringify(jobPayload(hex(1), T(1)))),
      verifiedWith: 'test',
    })
    // Each write waits 300 ms for the lock: the slice's first write gives up at about 300 ms, the
    // row-by-row retry at about 600 ms, and the lock is released at 750 ms, while the next write
    // (the one that kept the row's error) is waiting.
    mirror.sqlite.pragma('busy_timeout = 300')
    const holder = await holdWriteLock(path.join(mirror.dir, 'mirror.db'), 750)
    processor.wake()
    await until(
      'the delivery settled',
      () =>
        mirror!.sqlite
          .prepare(
            `SELECT processed_at IS NOT NULL OR (error IS NOT NULL AND error NOT LIKE ? || '%') FROM webhook_inbox WHERE delivery_id = 'd1'`,
          )
          .pluck()
          .get(MIRROR_FAULT_PREFIX) === 1,
      10_000,
    )
    await processor.drained()
    await holder.terminate()
    expect(mirror.sqlite.prepare(`SELECT processed_at IS NOT NULL AS done, error FROM webhook_inbox`).all()).toEqual([
      { done: 1, error: null },
    ])
    expect(mirror.sqlite.prepare('SELECT count(*) FROM jobs').pluck().get()).toBe(1)
    await processor.stop()
    await inbox.close()
  })
})
