// Conformance: spec "Webhook management", "Events" (delivery format, when events fire, retry
// schedule) and "Webhook delivery status". A loopback receiver records what arrives.
import { createHmac } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

interface Received {
  headers: http.IncomingHttpHeaders
  raw: string
}

let emu: Emu
let receiver: http.Server
let url = ''
let received: Received[] = []
let answer = 200

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(answer).end()
    })
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  emu = await boot({ allowHttpWebhooks: true })
})
afterAll(async () => {
  await emu.close()
  await new Promise((r) => receiver.close(r))
})
beforeEach(async () => {
  // One endpoint at a time: earlier tests' endpoints would receive the events too.
  for (const e of (await emu.get('/api/v1/webhooks?limit=100')).body.data) await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
  received = []
  answer = 200
})

const ALL = [
  'client.created',
  'client.updated',
  'client.deleted',
  'job.created',
  'job.updated',
  'job.status_changed',
  'job.deleted',
  'visit.status_changed',
  'visit.updated',
  'invoice.created',
  'invoice.updated',
  'invoice.paid',
  'invoice.deleted',
  'object.created',
  'object.updated',
  'object.stage_changed',
  'object.deleted',
]

async function subscribe(events = ALL): Promise<{ id: string; secret: string }> {
  const r = await emu.call('POST', '/api/v1/webhooks', { url, events })
  expect(r.status).toBe(200)
  return r.body.data
}
const flush = () => emu.control('POST', '/deliveries/flush')
const events = () => received.map((r) => r.headers['x-service-event'])

describe('Webhook management', () => {
  test('Webhook management: create returns the endpoint and its generated secret once; list and get omit it', async () => {
    const e = await subscribe(['client.created'])
    expect(e).toMatchObject({ id: expect.any(String), url, events: ['client.created'], isActive: true, secret: expect.any(String) })
    expect(JSON.stringify((await emu.get('/api/v1/webhooks')).body)).not.toContain(e.secret)
    const one = (await emu.get(`/api/v1/webhooks/${e.id}`)).body.data
    expect(one.secret).toBeUndefined()
    expect(one.deliveries24h).toEqual({ total: 0, pending: 0, success: 0, failed: 0, retrying: 0 })
  })
  const bad: [string, unknown][] = [
    ['a url not beginning https:// (http to a non-loopback host)', { url: 'http://example.com/x', events: ['client.created'] }],
    ['an empty event list', { url: 'https://example.com/x', events: [] }],
    ['an unsupported event name (invoice.sent)', { url: 'https://example.com/x', events: ['invoice.sent'] }],
    ['visit.created (not subscribable)', { url: 'https://example.com/x', events: ['visit.created'] }],
    ['a secret sent by the caller', { url: 'https://example.com/x', events: ['client.created'], secret: 'mine' }],
  ]
  test.each(bad)('Webhook management: %s gives 400', async (_n, body) => {
    expect((await emu.call('POST', '/api/v1/webhooks', body)).status).toBe(400)
  })
  test('Events: exactly seventeen subscribable names are accepted', async () => {
    expect((await subscribe(ALL)).id).toEqual(expect.any(String))
  })
  test('Delivery format 4: http:// receivers are refused unless the emulator allows http loopback receivers', async () => {
    const strict = await boot()
    expect((await strict.call('POST', '/api/v1/webhooks', { url, events: ['client.created'] })).status).toBe(400)
    expect((await strict.call('POST', '/api/v1/webhooks', { url: 'https://127.0.0.1:9/x', events: ['client.created'] })).status).toBe(200)
    await strict.close()
  })
  test('Webhook management: PUT with a new url generates a new secret returned in that response', async () => {
    const e = await subscribe(['client.created'])
    const same = (await emu.call('PUT', `/api/v1/webhooks/${e.id}`, { description: 'd' })).body.data
    expect(same.secret).toBeUndefined()
    const moved = (await emu.call('PUT', `/api/v1/webhooks/${e.id}`, { url: `${url}?v=2` })).body.data
    expect(moved.secret).toEqual(expect.any(String))
    expect(moved.secret).not.toBe(e.secret)
  })
  test('Webhook management: DELETE removes the endpoint and its deliveries', async () => {
    const e = await subscribe(['client.created'])
    expect((await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)).status).toBe(200)
    expect((await emu.get(`/api/v1/webhooks/${e.id}`)).status).toBe(404)
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
  })
})

describe('Events: delivery', () => {
  test('Delivery format: raw camelCase payload (no envelope), X-Service-Event/-Delivery/-Signature, hex HMAC-SHA256 of the exact body', async () => {
    const e = await subscribe(['client.created'])
    const c = (await emu.call('POST', '/api/v1/clients', { firstName: 'Hook' })).body.data
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(received).toHaveLength(1)
    const [d] = received
    expect(d!.headers['content-type']).toBe('application/json')
    expect(d!.headers['x-service-event']).toBe('client.created')
    expect(d!.headers['x-service-delivery']).toEqual(expect.any(String))
    expect(d!.headers['x-service-signature']).toBe(createHmac('sha256', e.secret).update(d!.raw).digest('hex'))
    expect(JSON.parse(d!.raw)).toEqual(c)
  })
  test('When events fire: client/job/invoice writes through v1 emit created/updated/deleted; *.deleted carries only {id}', async () => {
    const e = await subscribe()
    const c = (await emu.call('POST', '/api/v1/clients', { firstName: 'E' })).body.data
    await emu.call('PUT', `/api/v1/clients/${c.id}`, { notes: 'n' })
    const j = (await emu.call('POST', '/api/v1/jobs', { clientId: c.id })).body.data
    await emu.call('PUT', `/api/v1/jobs/${j.id}`, { priority: 'high' })
    await emu.call('DELETE', `/api/v1/jobs/${j.id}`)
    const inv = (await emu.call('POST', '/api/v1/invoices', { clientId: c.id, items: [{ name: 'x' }] })).body.data
    await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { status: 'paid' })
    await emu.call('DELETE', `/api/v1/invoices/${inv.id}`)
    await emu.call('DELETE', `/api/v1/clients/${c.id}`)
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(events()).toEqual([
      'client.created',
      'client.updated',
      'job.created',
      'job.updated',
      'job.deleted',
      'invoice.created',
      'invoice.updated',
      'invoice.paid',
      'invoice.deleted',
      'client.deleted',
    ])
    for (const r of received.filter((x) => String(x.headers['x-service-event']).endsWith('.deleted')))
      expect(Object.keys(JSON.parse(r.raw))).toEqual(['id'])
  })
  test('Known payload shapes: job.status_changed carries job {id, jobNumber, jobStatus}, previousStatus, newStatus (PUT and visit rollup)', async () => {
    const e = await subscribe(['job.status_changed', 'visit.status_changed', 'visit.updated'])
    const j = await firstLive(emu, 'jobs', (x) => x.jobStatus === 'scheduled' && x.visits.length > 0)
    await emu.call('PUT', `/api/v1/jobs/${j.id}`, { jobStatus: 'on-hold' })
    await emu.call('PUT', `/api/v1/jobs/${j.id}`, { jobStatus: 'scheduled' })
    await emu.call('PATCH', `/api/v1/visits/${j.visits[0].id}`, { visitStatus: 'in_progress' })
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(events()).toEqual(['job.status_changed', 'job.status_changed', 'visit.updated', 'visit.status_changed', 'job.status_changed'])
    expect(JSON.parse(received[0]!.raw)).toEqual({
      job: { id: j.id, jobNumber: j.jobNumber, jobStatus: 'on-hold' },
      previousStatus: 'scheduled',
      newStatus: 'on-hold',
    })
    expect(JSON.parse(received[4]!.raw)).toMatchObject({ previousStatus: 'scheduled', newStatus: 'in-progress' })
  })
  test('When events fire: web-app changes (control mutate) emit no client/job/visit/invoice event', async () => {
    const e = await subscribe()
    for (const resource of ['clients', 'jobs', 'visits', 'invoices']) {
      await emu.control('POST', '/mutate', { resource, op: 'update', count: 2, fields: { notes: 'app' } })
      await emu.control('POST', '/mutate', { resource, op: 'create' })
    }
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'delete', count: 1 })
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(received).toEqual([])
  })
  test('When events fire: object.* come from API and in-app writes; stage_changed only with a top-level status; object.deleted for in-app deletions', async () => {
    const e = await subscribe(['object.created', 'object.updated', 'object.stage_changed', 'object.deleted'])
    const rec = (await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'Ev' } })).body.data
    await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { stage: 'maintenance' })
    await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { status: 'retired' })
    await emu.control('POST', '/mutate', {
      resource: 'objects/equipment',
      op: 'update',
      id: rec.id,
      fields: { data: { location: 'Yard' } },
    })
    await emu.control('POST', '/mutate', { resource: 'objects/equipment', op: 'delete', id: rec.id })
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(events()).toEqual([
      'object.created',
      'object.updated',
      'object.updated',
      'object.stage_changed',
      'object.updated',
      'object.deleted',
    ])
    expect(JSON.parse(received[0]!.raw)).toMatchObject({ id: rec.id, object: 'equipment' })
    expect(JSON.parse(received[5]!.raw)).toEqual({ id: rec.id })
  })
  test('Custom objects: suppress_automation emits no object.* webhook (the write still happens)', async () => {
    const e = await subscribe(['object.created', 'object.updated', 'object.stage_changed'])
    const rec = (await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'Quiet' }, suppress_automation: true })).body.data
    await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { status: 'retired', suppress_automation: true })
    await emu.call('PUT', '/api/v1/objects/equipment/by/serialNumber/QUIET-1', { data: { name: 'Q' }, suppress_automation: true })
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(received).toEqual([])
    expect((await emu.get(`/api/v1/objects/equipment/${rec.id}`)).body.data.stage).toBe('retired')
  })
  test('Webhook delivery status: a 2xx answer makes the delivery success; a non-2xx makes it retrying with a next attempt, never re-sent', async () => {
    const e = await subscribe(['client.created'])
    await emu.call('POST', '/api/v1/clients', { firstName: 'Ok' })
    await flush()
    answer = 500
    await emu.call('POST', '/api/v1/clients', { firstName: 'Fail' })
    await flush()
    await emu.control('POST', '/clock', { advanceMs: 3 * 3_600_000 })
    await flush()
    const list = (await emu.get(`/api/v1/webhooks/${e.id}/deliveries`)).body
    expect(list.meta).toEqual({ page: 1, limit: 30, total: 2 })
    const [failed, ok] = list.data
    expect(ok).toMatchObject({
      event: 'client.created',
      status: 'success',
      attempts: 1,
      responseCode: 200,
      errorMessage: null,
      lastAttemptAt: expect.any(String),
    })
    expect(failed).toMatchObject({
      status: 'retrying',
      attempts: 1,
      responseCode: 500,
      errorMessage: expect.any(String),
      nextAttemptAt: expect.any(String),
    })
    expect(Date.parse(failed.nextAttemptAt) - Date.parse(failed.lastAttemptAt)).toBe(60_000)
    expect(Object.keys(ok)).not.toContain('payload')
    expect(received).toHaveLength(2)
    expect((await emu.get(`/api/v1/webhooks/${e.id}/deliveries?status=retrying`)).body.data.map((d: any) => d.id)).toEqual([failed.id])
    expect((await emu.get(`/api/v1/webhooks/${e.id}/deliveries?status=lost`)).status).toBe(400)
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
  })
  test('Webhook management: isActive false pauses deliveries', async () => {
    const e = await subscribe(['client.created'])
    await emu.call('PUT', `/api/v1/webhooks/${e.id}`, { isActive: false })
    await emu.call('POST', '/api/v1/clients', { firstName: 'Paused' })
    await flush()
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
    expect(received).toEqual([])
  })
})
