// Each bound of the intake on its own, over a real listener and mirror: the body deadline (408),
// the budget of body bytes held at once (503 as the bytes arrive), and the connection cap.
import net from 'node:net'
import { Writable } from 'node:stream'
import { afterEach, describe, expect, test } from 'vitest'
import { request } from 'undici'
import { createLogger } from '../../../src/log/logger.js'
import type { IntakeLimits } from '../../../src/webhooks/intake-limits.js'
import { startIntakeServer, type IntakeServer } from '../../../src/webhooks/intake-server.js'
import { sign } from '../../../src/webhooks/signature.js'
import { createWebhookService, type WebhookService } from '../../../src/webhooks/webhook-service.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'
import { SECRET, T, hex, jobPayload } from '../../support/webhook-env.js'

interface Env {
  service: WebhookService
  server: IntakeServer
  mirror: TempMirror
  logs: string[]
  /** Connections the listener closed on arrival (the listener counts them, not the intake). */
  dropped: { count: number }
}

let env: Env | undefined

afterEach(async () => {
  if (env === undefined) return
  await env.server.close()
  await env.service.stop()
  await env.mirror.dispose()
  env = undefined
})

async function start(limits: Partial<IntakeLimits>): Promise<Env> {
  const mirror = await tempMirror()
  const logs: string[] = []
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString('utf8')), cb()) }),
  })
  const service = createWebhookService({
    sqlite: mirror.sqlite,
    logger,
    config: {
      webhookSecrets: [SECRET],
      webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 1000, rotationGraceHours: 24, ...limits },
    },
    process: false,
  })
  service.start()
  const dropped = { count: 0 }
  const server = await startIntakeServer(service.handler, {
    path: '/webhooks',
    limits: service.limits,
    onDrop: () => dropped.count++,
  })
  env = { service, server, mirror, logs, dropped }
  return env
}

const inbox = (e: Env): number => e.mirror.sqlite.prepare('SELECT count(*) FROM webhook_inbox').pluck().get() as number

/** A raw connection: what it received, and a promise of its close. */
function connect(port: number): {
  socket: net.Socket
  received: () => string
  closed: Promise<void>
  saw: (text: string) => Promise<void>
} {
  const socket = net.connect(port, '127.0.0.1')
  let text = ''
  const waiters: { text: string; resolve: () => void }[] = []
  socket.on('error', () => undefined)
  socket.setEncoding('latin1').on('data', (d: string) => {
    text += d
    for (const w of waiters) if (text.includes(w.text)) w.resolve()
  })
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  return {
    socket,
    received: () => text,
    closed,
    saw: (wanted) => (text.includes(wanted) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ text: wanted, resolve }))),
  }
}

const headers = (lines: string[]): string =>
  `POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`

async function deliver(e: Env, i: number): Promise<number> {
  const body = Buffer.from(JSON.stringify(jobPayload(hex(i), T(i))))
  const res = await request(e.server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-event': 'job.updated',
      'x-service-delivery': `real-${i}`,
      'x-service-signature': sign(SECRET, body),
    },
    body,
  })
  await res.body.text()
  return res.statusCode
}

describe('webhook intake bounds', () => {
  test('a body still incomplete at webhooks.bodyTimeoutMs is answered 408, counted, and its connection closed', async () => {
    const e = await start({ bodyTimeoutMs: 300 })
    const c = connect(e.server.port)
    c.socket.write(
      headers([
        'Content-Length: 1000',
        'X-Service-Event: job.updated',
        'X-Service-Delivery: slow-1',
        `X-Service-Signature: ${'0'.repeat(64)}`,
      ]) + '{"id":',
    )
    await c.closed
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /)
    expect(c.received()).toMatch(/connection: close/i)
    expect(e.service.metrics.intake.bodyTimeout).toBe(1)
    expect(inbox(e)).toBe(0)
    expect(e.logs.join('')).toContain('webhooks.bodyTimeoutMs (408)')
    // The intake goes on serving.
    expect(await deliver(e, 1)).toBe(200)
  })

  test('a body whose bytes would pass webhooks.maxBufferedBytes is refused 503 as they arrive, while small signed deliveries still fit', async () => {
    // 1 MiB held at once; incomplete and large bodies (over 64 KiB) only three quarters of it.
    const e = await start({ maxBufferedBytes: 1 << 20 })
    const slow = connect(e.server.port)
    // 700,000 of 700,001 bytes: held, never complete.
    slow.socket.write(
      headers([
        'Content-Length: 700001',
        'X-Service-Event: job.updated',
        'X-Service-Delivery: big-1',
        `X-Service-Signature: ${'0'.repeat(64)}`,
      ]),
    )
    slow.socket.write(Buffer.alloc(700_000, 0x20))

    // A second large body passes the 786,432 bytes large bodies may hold once the slow one's bytes
    // are read; until the server has read them it is only refused for its signature.
    const large = Buffer.alloc(100_000, 0x20)
    let status = 0
    for (let attempt = 0; attempt < 100 && status !== 503; attempt++) {
      const res = await request(e.server.url, {
        method: 'POST',
        headers: { 'x-service-event': 'job.updated', 'x-service-delivery': 'big-2', 'x-service-signature': '0'.repeat(64) },
        body: large,
      })
      await res.body.text()
      status = res.statusCode
      if (status === 401) await new Promise((r) => setTimeout(r, 20))
    }
    expect(status).toBe(503)
    expect(e.service.metrics.intake.bufferFull).toBe(1)
    for (let i = 1; i <= 3; i++) expect(await deliver(e, i)).toBe(200)

    // The held body's bytes come back when its request ends: the same large body is now read
    // (and refused for its signature, not for memory).
    slow.socket.destroy()
    await slow.closed
    let again = 0
    for (let attempt = 0; attempt < 50 && again !== 401; attempt++) {
      const res = await request(e.server.url, {
        method: 'POST',
        headers: { 'x-service-event': 'job.updated', 'x-service-delivery': 'big-3', 'x-service-signature': '0'.repeat(64) },
        body: large,
      })
      await res.body.text()
      again = res.statusCode
    }
    expect(again).toBe(401)
    expect(inbox(e)).toBe(3)
  })

  test('connections that send only headers announcing 64 KiB bodies hold no budget: a signed delivery still gets 200', async () => {
    // 200 x 64 KiB announced = 12.5 MiB, past the 8 MiB budget; nothing of it has arrived.
    const e = await start({ maxBufferedBytes: 8 << 20 })
    const flood = Array.from({ length: 200 }, () => connect(e.server.port))
    // `Expect: 100-continue` only tells the test when the handler has the request: node:http
    // answers 100 just before it hands the request over.
    for (const [i, c] of flood.entries())
      c.socket.write(
        headers([
          'Content-Length: 65536',
          'Expect: 100-continue',
          'X-Service-Event: job.updated',
          `X-Service-Delivery: flood-${i}`,
          `X-Service-Signature: ${'0'.repeat(64)}`,
        ]),
      )
    await Promise.all(flood.map((c) => c.saw('100 Continue')))
    for (let i = 1; i <= 3; i++) expect(await deliver(e, i)).toBe(200)
    expect(e.service.metrics.intake.bufferFull).toBe(0)
    expect(inbox(e)).toBe(3)
    for (const c of flood) c.socket.destroy()
  })

  test('the bytes of a body are given back once it is answered: large bodies one after another are each read', async () => {
    const e = await start({ maxBufferedBytes: 1 << 20 })
    // Each takes 700,000 of the 786,432 bytes large bodies may hold: the next fits only if the
    // previous one's bytes came back with its answer.
    const body = Buffer.alloc(700_000, 0x20)
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await request(e.server.url, {
        method: 'POST',
        headers: { 'x-service-event': 'job.updated', 'x-service-delivery': `big-${i}`, 'x-service-signature': '0'.repeat(64) },
        body,
      })
      await res.body.text()
      statuses.push(res.statusCode)
    }
    expect(statuses).toEqual([401, 401, 401, 401])
    expect(e.service.metrics.intake.bufferFull).toBe(0)
  })

  test('a body without Content-Length is refused 503 once its chunks would pass webhooks.maxBufferedBytes', async () => {
    const e = await start({ maxBufferedBytes: 1 << 20 })
    const c = connect(e.server.port)
    c.socket.write(
      headers([
        'Transfer-Encoding: chunked',
        'X-Service-Event: job.updated',
        'X-Service-Delivery: chunked-1',
        `X-Service-Signature: ${'0'.repeat(64)}`,
      ]),
    )
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    // 13 chunks of 64 KiB pass the 768 KiB large bodies may hold, and stay under the 1 MiB cap.
    for (let i = 0; i < 13 && !c.socket.destroyed; i++) c.socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString('latin1')}\r\n`)
    await c.closed
    expect(c.received()).toMatch(/^HTTP\/1\.1 503 /)
    expect(e.service.metrics.intake.bufferFull).toBe(1)
    expect(await deliver(e, 1)).toBe(200)
  })

  test('connections past webhooks.maxConnections are closed on arrival and counted; a freed slot takes the next', async () => {
    const e = await start({ maxConnections: 2 })
    // Two keep-alive connections hold both slots once their request is answered.
    const held = [connect(e.server.port), connect(e.server.port)]
    for (const h of held) h.socket.write('GET /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await Promise.all(held.map((h) => h.saw('405')))
    const third = connect(e.server.port)
    third.socket.write('GET /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await third.closed
    expect(third.received()).toBe('')
    expect(e.dropped.count).toBe(1)
    held[0]!.socket.destroy()
    await held[0]!.closed
    // The server learns of the close asynchronously: retry until the freed slot is seen.
    let status = 0
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) status = await deliver(e, 1).catch(() => 0)
    expect(status).toBe(200)
    held[1]!.socket.destroy()
  })
})
