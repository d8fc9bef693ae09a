// Intake over real HTTP on 127.0.0.1: every bad input answered as docs/guarantees.md, Acknowledged
// means stored, says, each with nothing stored; good deliveries stored durably, exactly as signed,
// before the 200.
import http from 'node:http'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { sign } from '../../../src/webhooks/signature.js'
import { SECRET, T, hex, jobPayload, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'

let env: WebhookEnv
beforeEach(async () => {
  env = await webhookEnv({ process: false, maxBodyBytes: 4096 })
})
afterEach(() => env.close())

const body = Buffer.from(JSON.stringify(jobPayload(hex(1), T(1))))
const good = (extra: Record<string, string | undefined> = {}) => ({
  'x-service-event': 'job.updated',
  'x-service-delivery': 'd-1',
  'x-service-signature': sign(SECRET, body),
  ...extra,
})

describe('refused deliveries store nothing', () => {
  test.each([
    ['missing signature', good({ 'x-service-signature': undefined }), 401],
    ['empty signature', good({ 'x-service-signature': '' }), 401],
    ['signature by another secret', good({ 'x-service-signature': sign('whsec_someone_else_entirely', body) }), 401],
    ['signature in uppercase hex', good({ 'x-service-signature': sign(SECRET, body).toUpperCase() }), 401],
    ['signature one character short', good({ 'x-service-signature': sign(SECRET, body).slice(1) }), 401],
    ['signature with a version prefix', good({ 'x-service-signature': `sha256=${sign(SECRET, body)}` }), 401],
    ['missing event header', good({ 'x-service-event': undefined }), 400],
    ['missing delivery header', good({ 'x-service-delivery': undefined }), 400],
    ['blank delivery header', good({ 'x-service-delivery': '  ' }), 400],
  ])('%s: %d', async (_name, headers, status) => {
    const res = await env.post(body, headers)
    expect(res.status).toBe(status)
    expect(env.inboxCount()).toBe(0)
  })

  test.each([
    ['not JSON', 'not json {'],
    ['truncated JSON', '{"id": "x"'],
    ['a JSON array', '[1,2,3]'],
    ['a JSON string', '"hello"'],
    ['empty body', ''],
  ])('signed body that is %s: 400', async (_name, text) => {
    const res = await env.post(text, good({ 'x-service-signature': sign(SECRET, Buffer.from(text)) }))
    expect(res.status).toBe(400)
    expect(env.inboxCount()).toBe(0)
  })

  test('a body signed over other bytes than those sent (a re-serialised body): 401', async () => {
    const pretty = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 2))
    expect((await env.post(pretty, good())).status).toBe(401)
    expect(env.inboxCount()).toBe(0)
  })

  test('over the cap with Content-Length: 413, nothing stored', async () => {
    const big = Buffer.from(JSON.stringify({ id: 'x', pad: 'a'.repeat(5000) }))
    const res = await env.post(big, good({ 'x-service-signature': sign(SECRET, big) }))
    expect(res.status).toBe(413)
    expect(env.inboxCount()).toBe(0)
  })

  test('over the cap without Content-Length (chunked, never ending): 413, connection closed', async () => {
    const { status, closed } = await new Promise<{ status: number; closed: boolean }>((resolve, reject) => {
      const url = new URL(env.server.url)
      const req = http.request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { ...good(), 'transfer-encoding': 'chunked' },
      })
      req.on('error', reject)
      req.on('response', (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, closed: res.headers.connection === 'close' }))
      })
      // Keep sending until the server answers: it must not wait for the end of the body.
      const chunk = Buffer.alloc(1024, 0x20)
      const pump = () => {
        while (req.write(chunk)) if (req.destroyed) return
      }
      req.on('drain', pump)
      pump()
    })
    expect(status).toBe(413)
    expect(closed).toBe(true)
    expect(env.inboxCount()).toBe(0)
  })

  test('a GET: 405, never 410', async () => {
    const { request } = await import('undici')
    const res = await request(env.server.url, { method: 'GET' })
    await res.body.text()
    expect(res.statusCode).toBe(405)
  })

  test('neither the signature nor the secret reaches the logs', async () => {
    await env.post(body, good({ 'x-service-signature': sign('whsec_someone_else_entirely', body) }))
    await env.post(body, good())
    const logs = env.logs()
    expect(logs).toContain('signature missing or not matching')
    expect(logs).not.toContain(SECRET)
    expect(logs).not.toContain(sign(SECRET, body))
    expect(logs).not.toContain(sign('whsec_someone_else_entirely', body))
  })
})

describe('accepted deliveries', () => {
  test('stored before the 200, with event, receipt time and the secret that verified it', async () => {
    const res = await env.post(body, good())
    expect(res.status).toBe(200)
    const [row] = env.rows('SELECT * FROM webhook_inbox')
    expect(row).toMatchObject({
      delivery_id: 'd-1',
      seq: 1,
      event: 'job.updated',
      raw: body.toString(),
      raw_bytes: null,
      verified_with: 'FSM_WEBHOOK_SECRETS#0',
      processed_at: null,
      error: null,
    })
    expect(row!.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  test('a delivery id seen before: 200 and nothing changes', async () => {
    await env.post(body, good())
    const before = env.rows('SELECT * FROM webhook_inbox')
    const other = Buffer.from(JSON.stringify(jobPayload(hex(1), T(9))))
    const res = await env.post(other, good({ 'x-service-signature': sign(SECRET, other) }))
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toEqual({ received: true, duplicate: true })
    expect(env.rows('SELECT * FROM webhook_inbox')).toEqual(before)
  })

  test.each([
    [
      'non-ASCII text',
      Buffer.from('{"id": "000000000000000000000002", "updatedAt": "2026-01-01T00:00:02.000Z", "notes": "Zoë — 東京 🚐 café"}'),
    ],
    ['pretty-printed JSON', Buffer.from(JSON.stringify({ id: hex(2), updatedAt: T(2), nested: { a: [1, 2] } }, null, 4) + '\n')],
    [
      'key order a re-serialisation would change',
      Buffer.from('{"updatedAt":"2026-01-01T00:00:02.000Z","1":"one","id":"000000000000000000000002","b":2,"a":1}'),
    ],
    [
      'numbers a re-serialisation would change',
      Buffer.from('{"id":"000000000000000000000002","total":1.50,"big":1e2,"updatedAt":"2026-01-01T00:00:02.000Z"}'),
    ],
    [
      'escapes a re-serialisation would change',
      Buffer.from('{"id":"000000000000000000000002","notes":"caf\\u00e9 \\/ ok","updatedAt":"2026-01-01T00:00:02.000Z"}'),
    ],
  ])('signature over the exact bytes: %s', async (_name, bytes) => {
    expect(JSON.stringify(JSON.parse(bytes.toString('utf8')))).not.toBe(bytes.toString('utf8'))
    const res = await env.deliver('d-x', 'job.updated', bytes)
    expect(res.status).toBe(200)
    const [row] = env.rows('SELECT raw, raw_bytes FROM webhook_inbox')
    expect(Buffer.from(row!.raw as string, 'utf8').equals(bytes)).toBe(true)
    expect(row!.raw_bytes).toBeNull()
  })

  test('a body that is not valid UTF-8 is verified over its bytes and kept as those bytes', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"id":"000000000000000000000003","updatedAt":"2026-01-01T00:00:03.000Z","notes":"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}'),
    ])
    const res = await env.deliver('d-bin', 'job.updated', bytes)
    expect(res.status).toBe(200)
    const [row] = env.rows('SELECT raw, raw_bytes FROM webhook_inbox')
    expect(row!.raw).toBeNull()
    expect(Buffer.compare(row!.raw_bytes as Buffer, bytes)).toBe(0)
    expect(sign(SECRET, row!.raw_bytes as Buffer)).toBe(sign(SECRET, bytes))
  })

  test('deliveries arriving together share group commits and each gets its own answer', async () => {
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => env.deliver(`g-${i % 50}`, 'job.updated', jobPayload(hex(i), T(i)))),
    )
    expect(results.every((r) => r.status === 200)).toBe(true)
    expect(results.filter((r) => r.body.includes('duplicate'))).toHaveLength(10)
    expect(env.inboxCount()).toBe(50)
    const seqs = env.rows('SELECT seq FROM webhook_inbox ORDER BY seq').map((r) => r.seq)
    expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
  })
})

describe('503 when the delivery cannot be kept', () => {
  test('backlog at webhooks.maxBacklog: 503 with a log line, nothing stored', async () => {
    await env.close()
    env = await webhookEnv({ process: false, maxBacklog: 2 })
    expect((await env.deliver('a', 'job.updated', jobPayload(hex(1), T(1)))).status).toBe(200)
    expect((await env.deliver('b', 'job.updated', jobPayload(hex(2), T(2)))).status).toBe(200)
    expect((await env.deliver('c', 'job.updated', jobPayload(hex(3), T(3)))).status).toBe(503)
    expect(env.inboxCount()).toBe(2)
    expect(env.logs()).toContain('INBOX_BACKLOG_FULL')
  })

  test('a store that refuses the write: 503, nothing stored, and the inbox works again afterwards', async () => {
    env.mirror.sqlite.exec(
      `CREATE TRIGGER fail_inbox BEFORE INSERT ON webhook_inbox BEGIN SELECT RAISE(ABORT, 'disk I/O error (simulated)'); END`,
    )
    expect((await env.deliver('a', 'job.updated', jobPayload(hex(1), T(1)))).status).toBe(503)
    expect(env.logs()).toContain('webhook deliveries could not be stored')
    env.mirror.sqlite.exec('DROP TRIGGER fail_inbox')
    expect(env.inboxCount()).toBe(0)
    expect((await env.deliver('a', 'job.updated', jobPayload(hex(1), T(1)))).status).toBe(200)
  })

  test('an inbox that is closed (daemon stopping): 503', async () => {
    await env.service.inbox.close()
    expect((await env.deliver('a', 'job.updated', jobPayload(hex(1), T(1)))).status).toBe(503)
    expect(env.inboxCount()).toBe(0)
  })
})

describe('commits are durable', () => {
  test("an ack follows a group commit whose log was synced; the connection's synchronous setting is left as it was", async () => {
    const before = env.mirror.sqlite.pragma('synchronous', { simple: true })
    expect((await env.deliver('a', 'job.updated', jobPayload(hex(1), T(1)))).status).toBe(200)
    expect({ groups: env.service.metrics.intake.groupCommits, deliveries: env.service.metrics.intake.groupedDeliveries }).toEqual({
      groups: 1,
      deliveries: 1,
    })
    expect(env.mirror.sqlite.pragma('synchronous', { simple: true })).toBe(before)
  })
})
