// Conformance: the smaller rules of several spec sections that the per-section files leave out (Errors,
// Invoice, the processor payment rule of "Invoice status", Client job aggregation, Custom objects, API
// keys, Versioning, Webhook management and delivery, Job status).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

const clientId = async (): Promise<string> => (await firstLive(emu, 'clients')).id
const newInvoice = async (fields: Record<string, unknown> = {}): Promise<any> => {
  const r = await emu.call('POST', '/api/v1/invoices', {
    clientId: await clientId(),
    items: [{ name: 'Service', quantity: 1, rate: 100 }],
    total: 100,
    ...fields,
  })
  expect(r.status).toBe(200)
  return r.body.data
}
const counter = async (name: string): Promise<number> => (await emu.control('GET', '/counters'))[name] ?? 0

describe('Errors', () => {
  test('Errors: an endpoint failure body has message first and error second', async () => {
    const r = await emu.call('POST', '/api/v1/clients', { lastName: 'Only' })
    expect(r.status).toBe(400)
    expect(Object.keys(r.body).slice(0, 3)).toEqual(['success', 'message', 'error'])
  })
})

describe('Invoice', () => {
  test('Invoice: paidAmount, paymentStatus and actionStatus are accepted on update only (ignored on create)', async () => {
    const inv = await newInvoice({ paidAmount: 60, paymentStatus: 'paid', actionStatus: 'sent' })
    expect(inv).toMatchObject({ paidAmount: 0, paymentStatus: 'unpaid', status: 'unpaid' })
    const u = await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { paidAmount: 60, paymentStatus: 'partially_paid', actionStatus: 'sent' })
    expect(u.body.data).toMatchObject({ paidAmount: 60, paymentStatus: 'partially_paid', actionStatus: 'sent' })
  })
  test.each(['discountType', 'markupType'])('Invoice: %s is 1 (percent) or 2 (flat amount); anything else gives 400', async (key) => {
    expect((await emu.call('POST', '/api/v1/invoices', { clientId: await clientId(), items: [{ name: 'S' }], [key]: 3 })).status).toBe(400)
    expect((await newInvoice({ [key]: 1 }))[key]).toBe(1)
  })
  test('Invoice: the create schema has no discountTotal, markupTotal or taxTotal fields', async () => {
    const inv = await newInvoice({ discount: 5, markup: 2 })
    const one = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data
    for (const key of ['discountTotal', 'markupTotal', 'taxTotal']) expect(one).not.toHaveProperty(key)
  })
})

describe('Invoice status: payments through the connected payment processor', () => {
  test('Invoice status: a part payment makes an unpaid invoice partial; the balance reaching zero makes it paid', async () => {
    const inv = await newInvoice()
    const part = await emu.control('POST', `/invoices/${inv.id}/payments`, { amount: 30 })
    expect(part.invoice).toMatchObject({ status: 'partial', paidAmount: 30, paymentStatus: 'partially_paid' })
    expect(part.balance).toBe(70)
    const rest = await emu.control('POST', `/invoices/${inv.id}/payments`, {})
    expect(rest.amount).toBe(70)
    const got = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data
    expect(got).toMatchObject({ status: 'paid', paidAmount: 100, paymentStatus: 'paid' })
    expect(got.updatedAt >= inv.updatedAt).toBe(true)
  })
  test('When events fire: a processor payment is not a v1 write: no invoice.updated or invoice.paid; since and status lists see it', async () => {
    const inv = await newInvoice()
    const cursor = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.updatedAt
    const [updated, paid] = [await counter('events.invoice.updated'), await counter('events.invoice.paid')]
    await emu.control('POST', `/invoices/${inv.id}/payments`, {})
    expect([await counter('events.invoice.updated'), await counter('events.invoice.paid')]).toEqual([updated, paid])
    const since = await emu.get(`/api/v1/invoices?sort=updatedAt:asc&limit=100&since=${encodeURIComponent(cursor)}`)
    expect(since.body.data.find((r: any) => r.id === inv.id)).toMatchObject({ status: 'paid' })
    expect((await emu.get('/api/v1/invoices?status=paid&limit=100&sort=updatedAt:desc')).body.data[0].id).toBe(inv.id)
  })
  test('Invoice status: a payment with the processor not connected gives 400 INTEGRATION_NOT_CONNECTED', async () => {
    const inv = await newInvoice()
    await emu.control('POST', '/integrations/payments', { connected: false })
    const r = await emu.call('POST', `/__emulator/invoices/${inv.id}/payments`, { amount: 10 }, { key: null })
    await emu.control('POST', '/integrations/payments', { connected: true })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('INTEGRATION_NOT_CONNECTED')
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.paidAmount).toBe(0)
  })
})

describe('Client: job aggregation', () => {
  test('Client: jobCount and jobTotalAmount are absent while job aggregation is off (the default)', async () => {
    const row = (await emu.get('/api/v1/clients?limit=1')).body.data[0]
    expect(row).not.toHaveProperty('jobCount')
    expect(row).not.toHaveProperty('jobTotalAmount')
  })
  test('Client: with job aggregation on, list rows (only) carry jobCount and jobTotalAmount; a job write changes them without moving updatedAt', async () => {
    const local = await boot({ jobAggregation: true })
    try {
      const c = (await local.call('POST', '/api/v1/clients', { firstName: 'Agg' })).body.data
      const row = async (): Promise<any> =>
        (await local.get('/api/v1/clients?sort=updatedAt:desc&limit=100')).body.data.find((r: any) => r.id === c.id)
      const first = await row()
      expect(first).toMatchObject({ jobCount: 0, jobTotalAmount: 0 })
      const keys = Object.keys(first)
      expect(keys.slice(keys.indexOf('properties'), keys.indexOf('properties') + 4)).toEqual([
        'properties',
        'jobCount',
        'jobTotalAmount',
        'createdBy',
      ])
      await local.call('POST', '/api/v1/jobs', { clientId: c.id, total: 120.5 })
      const j = (await local.call('POST', '/api/v1/jobs', { clientId: c.id, total: 30 })).body.data
      expect(await row()).toMatchObject({ jobCount: 2, jobTotalAmount: 150.5, updatedAt: first.updatedAt })
      await local.call('DELETE', `/api/v1/jobs/${j.id}`)
      expect(await row()).toMatchObject({ jobCount: 1, jobTotalAmount: 120.5 })
      expect((await local.get(`/api/v1/clients/${c.id}`)).body.data).not.toHaveProperty('jobCount')
      await local.control('POST', '/account', { jobAggregation: false })
      expect(await row()).not.toHaveProperty('jobCount')
    } finally {
      await local.close()
    }
  })
})

describe('Custom objects', () => {
  test('Custom objects: relation ids are not checked for existence (except client-restricted relations); the mirror is null', async () => {
    const ghost = 'abcdefabcdefabcdefabcdef'
    const r = await emu.call('POST', '/api/v1/objects/inspections', { data: { title: 'ghost', equipmentId: ghost } })
    expect(r.status).toBe(201)
    expect(r.body.data.data).toMatchObject({ equipmentId: ghost, equipmentName: null })
  })
  test('Custom objects: a multi relation is cleared with [] or null (stored as [])', async () => {
    const team = (await emu.get('/api/teams', { key: null, bearer: emu.apiKey })).body.data.team.map((m: any) => m.id)
    const rec = (await emu.call('POST', '/api/v1/objects/inspections', { data: { title: 'multi', inspectorIds: [team[0], team[1]] } })).body
      .data
    expect(
      (await emu.call('PATCH', `/api/v1/objects/inspections/${rec.id}`, { data: { inspectorIds: [] } })).body.data.data.inspectorIds,
    ).toEqual([])
    await emu.call('PATCH', `/api/v1/objects/inspections/${rec.id}`, { data: { inspectorIds: team[0] } })
    expect(
      (await emu.call('PATCH', `/api/v1/objects/inspections/${rec.id}`, { data: { inspectorIds: null } })).body.data.data.inspectorIds,
    ).toEqual([])
  })
  test('Custom objects: upsert on a field the object does not have gives 400 Unknown field(s) in data', async () => {
    const r = await emu.call('PUT', '/api/v1/objects/equipment/by/colour/red', { data: { name: 'x' } })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe('Unknown field(s) in data: colour')
  })
  test('Custom objects: suppress_automation still runs required-field validation, auto display ids and stage mirroring', async () => {
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { serialNumber: 'q' }, suppress_automation: true })).status).toBe(
      400,
    )
    const r = await emu.call('POST', '/api/v1/objects/equipment', {
      data: { name: 'quiet' },
      status: 'maintenance',
      suppress_automation: true,
    })
    expect(r.status).toBe(201)
    expect(r.body.data.data).toMatchObject({ status: 'maintenance', customId: expect.stringMatching(/^EQ-\d{5}$/) })
  })
  test('Custom objects: there is no DELETE on custom objects', async () => {
    const rec = await firstLive(emu, 'objects/equipment')
    expect((await emu.call('DELETE', `/api/v1/objects/equipment/${rec.id}`)).status).toBe(404)
    expect((await emu.get(`/api/v1/objects/equipment/${rec.id}`)).status).toBe(200)
  })
  test('Custom objects: client is accepted by the schema route only; its list and create give the built-in 400', async () => {
    const message = "'client' is a built-in module, not a custom object. Use /api/v1/clients instead."
    expect((await emu.get('/api/v1/objects/client')).body).toMatchObject({ success: false, message })
    const r = await emu.call('POST', '/api/v1/objects/client', { data: { gateCode: '1' } })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe(message)
  })
  test('Custom objects: each discovery item carries its schemaUrl', async () => {
    const items = (await emu.get('/api/v1/objects')).body.data
    for (const item of items) expect(item.schemaUrl).toBe(`/api/v1/objects/${item.slug}/schema`)
  })
})

describe('API keys', () => {
  test('API keys: the list holds every active key; inactive and revoked keys are left out', async () => {
    const admin = { key: null, bearer: emu.apiKey }
    const inactive = await emu.key({ active: false })
    const revoked = (await emu.call('POST', '/api/v1/api-keys', { name: 'to revoke' }, admin)).body.data
    await emu.call('DELETE', `/api/v1/api-keys/${revoked.id}`, undefined, admin)
    const ids = (await emu.get('/api/v1/api-keys', admin)).body.data.map((k: any) => k.id)
    expect(ids.length).toBeGreaterThan(0)
    expect(ids).not.toContain(inactive.id)
    expect(ids).not.toContain(revoked.id)
  })
})

describe('Versioning', () => {
  test.each(['/api/clients', '/api/jobs', '/api/team', '/api/product-service', '/api/company-info'])(
    'Versioning 2: the unversioned legacy route %s remains and takes the key as Bearer',
    async (path) => {
      expect((await emu.get(path, { key: null, bearer: emu.apiKey })).status).toBe(200)
      expect((await emu.get(path)).status).toBe(401)
    },
  )
})

describe('Webhooks: management limits and failures', () => {
  let receiver: Server
  let url = ''
  let answer = 500
  const deliveryIds: string[] = []
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      deliveryIds.push(String(req.headers['x-service-delivery']))
      req.resume()
      req.on('end', () => res.writeHead(answer).end())
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  })
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())))

  test('Limits: the webhook list pages with default 30 and clamps limit to 100', async () => {
    const local = await boot({ allowHttpWebhooks: true })
    try {
      for (let i = 0; i < 102; i++)
        await local.call('POST', '/api/v1/webhooks', { url: `https://example.com/h${i}`, events: ['client.created'] })
      expect((await local.get('/api/v1/webhooks')).body.meta).toEqual({ page: 1, limit: 30, total: 102 })
      const big = (await local.get('/api/v1/webhooks?limit=500')).body
      expect(big.meta.limit).toBe(100)
      expect(big.data).toHaveLength(100)
      expect((await local.get('/api/v1/webhooks?limit=100&page=2')).body.data).toHaveLength(2)
    } finally {
      await local.close()
    }
  })

  test('Retry schedule: endpoints are never disabled after repeated failures; deliveries filter by event; 24-hour totals', async () => {
    const local = await boot({ allowHttpWebhooks: true })
    try {
      answer = 500
      const e = (await local.call('POST', '/api/v1/webhooks', { url, events: ['client.created', 'client.updated'] })).body.data
      for (let i = 0; i < 4; i++) await local.call('POST', '/api/v1/clients', { firstName: `F${i}` })
      const c = (await local.call('POST', '/api/v1/clients', { firstName: 'U' })).body.data
      await local.call('PUT', `/api/v1/clients/${c.id}`, { notes: 'n' })
      await local.control('POST', '/deliveries/flush')
      const one = (await local.get(`/api/v1/webhooks/${e.id}`)).body.data
      expect(one.isActive).toBe(true)
      expect(one.deliveries24h).toMatchObject({ total: 6, retrying: 6, success: 0 })
      const updates = (await local.get(`/api/v1/webhooks/${e.id}/deliveries?event=client.updated`)).body
      expect(updates.meta.total).toBe(1)
      expect(updates.data[0]).toMatchObject({ event: 'client.updated', status: 'retrying' })
      answer = 200
      await local.call('POST', '/api/v1/clients', { firstName: 'Later' })
      await local.control('POST', '/deliveries/flush')
      expect((await local.get(`/api/v1/webhooks/${e.id}/deliveries?status=success`)).body.meta.total).toBe(1)
      await local.control('POST', '/clock', { advanceMs: 25 * 3_600_000 })
      expect((await local.get(`/api/v1/webhooks/${e.id}`)).body.data.deliveries24h.total).toBe(0)
      expect((await local.get(`/api/v1/webhooks/${e.id}/deliveries`)).body.meta.total).toBe(7)
      // Limits: deliveries page with limit 1-100 (default 30), clamped.
      expect((await local.get(`/api/v1/webhooks/${e.id}/deliveries?limit=500`)).body.meta).toEqual({ page: 1, limit: 100, total: 7 })
      expect((await local.get(`/api/v1/webhooks/${e.id}/deliveries?limit=2&page=4`)).body.data).toHaveLength(1)
    } finally {
      await local.close()
    }
  })

  test('Delivery format 2: X-Service-Delivery is the delivery record id (the deduplication key)', async () => {
    const local = await boot({ allowHttpWebhooks: true })
    try {
      answer = 200
      deliveryIds.length = 0
      const e = (await local.call('POST', '/api/v1/webhooks', { url, events: ['client.created'] })).body.data
      await local.call('POST', '/api/v1/clients', { firstName: 'A' })
      await local.call('POST', '/api/v1/clients', { firstName: 'B' })
      await local.control('POST', '/deliveries/flush')
      const listed = (await local.get(`/api/v1/webhooks/${e.id}/deliveries`)).body.data.map((d: any) => d.id)
      expect([...deliveryIds].sort()).toEqual([...listed].sort())
      expect(new Set(deliveryIds).size).toBe(2)
    } finally {
      await local.close()
    }
  })

  test('Webhook management: description and metadata (JSON) are stored and returned', async () => {
    const metadata = { team: 'ops', tags: ['a', 'b'], n: 1 }
    const e = (
      await emu.call('POST', '/api/v1/webhooks', { url: 'https://example.com/meta', events: ['job.created'], description: 'd', metadata })
    ).body.data
    expect((await emu.get(`/api/v1/webhooks/${e.id}`)).body.data).toMatchObject({ description: 'd', metadata })
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
  })

  test('Webhook management: the update method is PUT, not PATCH', async () => {
    const e = (await emu.call('POST', '/api/v1/webhooks', { url: 'https://example.com/patch', events: ['client.created'] })).body.data
    expect((await emu.call('PATCH', `/api/v1/webhooks/${e.id}`, { description: 'x' })).status).toBe(404)
    expect((await emu.call('PUT', `/api/v1/webhooks/${e.id}`, { description: 'x' })).body.data.description).toBe('x')
    await emu.call('DELETE', `/api/v1/webhooks/${e.id}`)
  })
})

describe('Job status', () => {
  test('Job status: PUT with a jobStatus that is not a pipeline key gives 400 and leaves the job', async () => {
    const job = await firstLive(emu, 'jobs')
    const r = await emu.call('PUT', `/api/v1/jobs/${job.id}`, { jobStatus: 'In Progress' })
    expect(r.status).toBe(400)
    expect((await emu.get(`/api/v1/jobs/${job.id}`)).body.data.jobStatus).toBe(job.jobStatus)
  })
})
