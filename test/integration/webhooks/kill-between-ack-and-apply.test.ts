// Acknowledged means stored (docs/guarantees.md): a process killed with SIGKILL after its
// 200 and before applying the delivery loses nothing; the next start applies it.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'
import { Writable } from 'node:stream'
import { request } from 'undici'
import { createLogger } from '../../../src/log/logger.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { systemClock } from '../../../src/model/clock.js'
import { IntakeJournal } from '../../../src/webhooks/intake-journal.js'
import { sign } from '../../../src/webhooks/signature.js'
import { tempDir } from '../../support/temp-mirror.js'
import { SECRET, T, hex, jobPayload, webhookEnv } from '../../support/webhook-env.js'

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../support/intake-child.ts')

test('SIGKILL between ack and apply: the delivery is applied after restart', async () => {
  const db = path.join(tempDir(), 'mirror.db')
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, db, SECRET], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const line = (await lines.next()).value as string
  const { url } = JSON.parse(line) as { url: string }

  const statuses: number[] = []
  for (let i = 1; i <= 5; i++) {
    const body = Buffer.from(JSON.stringify(jobPayload(hex(i), T(i))))
    const res = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'job.created',
        'x-service-delivery': `crash-${i}`,
        'x-service-signature': sign(SECRET, body),
      },
      body,
    })
    await res.body.text()
    statuses.push(res.statusCode)
  }
  expect(statuses).toEqual([200, 200, 200, 200, 200])
  child.kill('SIGKILL')
  expect(await exited).toBe('SIGKILL')

  const mirror = await openMirror(db)
  expect(mirror.sqlite.prepare('SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL').pluck().get()).toBe(5)
  expect(mirror.sqlite.prepare('SELECT count(*) FROM jobs').pluck().get()).toBe(0)
  const env = await webhookEnv({ mirror: Object.assign(mirror, { dir: path.dirname(db), dispose: () => mirror.close() }) })
  try {
    await env.service.processor.drained()
    expect(env.rows('SELECT id, updated_at FROM jobs ORDER BY id')).toEqual([1, 2, 3, 4, 5].map((i) => ({ id: hex(i), updated_at: T(i) })))
    expect(env.rows('SELECT count(*) AS n FROM webhook_inbox WHERE processed_at IS NULL')).toEqual([{ n: 0 }])
  } finally {
    await env.close()
    await mirror.close()
  }
})

test('SIGKILL with deliveries in the intake journal, one of them already in the inbox but not yet let go: each is applied once after restart', async () => {
  const dir = tempDir()
  const db = path.join(dir, 'mirror.db')
  const journalFile = path.join(dir, 'intake-journal.db')
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, db, SECRET, journalFile, 'after-inbox-commit'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const { url } = JSON.parse((await lines.next()).value as string) as { url: string }
  const post = async (i: number) => {
    const body = Buffer.from(JSON.stringify(jobPayload(hex(i), T(i))))
    const res = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-service-event': 'job.created',
        'x-service-delivery': `journal-${i}`,
        'x-service-signature': sign(SECRET, body),
      },
      body,
    })
    await res.body.text()
    return res.statusCode
  }
  expect(await post(1)).toBe(200)
  // The first relay put delivery 1 in the inbox and stopped before the journal let it go.
  expect(JSON.parse((await lines.next()).value as string)).toEqual({ relayed: 1, account: 'a' })
  expect([await post(2), await post(3)]).toEqual([200, 200])
  child.kill('SIGKILL')
  expect(await exited).toBe('SIGKILL')

  const mirror = await openMirror(db)
  expect(mirror.sqlite.prepare('SELECT delivery_id FROM webhook_inbox').pluck().all()).toEqual(['journal-1'])
  const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
  const journal = new IntakeJournal({ file: journalFile, logger, clock: systemClock })
  expect(journal.size).toBe(3)
  const env = await webhookEnv({
    mirror: Object.assign(mirror, { dir, dispose: () => mirror.close() }),
    journal: { journal, accountId: 'a' },
  })
  try {
    await env.service.processor.drained()
    expect(env.rows('SELECT id, updated_at FROM jobs ORDER BY id')).toEqual([1, 2, 3].map((i) => ({ id: hex(i), updated_at: T(i) })))
    expect(env.rows('SELECT delivery_id, attempts FROM webhook_inbox ORDER BY delivery_id')).toEqual(
      [1, 2, 3].map((i) => ({ delivery_id: `journal-${i}`, attempts: 1 })),
    )
    expect(journal.size).toBe(0)
  } finally {
    await env.close()
    await journal.close()
    await mirror.close()
  }
})
