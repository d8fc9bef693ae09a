// Conformance: spec "Integrations", "Legacy routes", "Legacy-route resources", "Versioning".
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type CallOptions, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

const bearer = (): CallOptions => ({ key: null, bearer: emu.apiKey })

describe('Integrations', () => {
  test.each(['calendar-a', 'calendar-b'])(
    'Integrations: POST %s/sync runs from the stored sync point and answers integer counts',
    async (name) => {
      await emu.call('POST', `/api/v1/integrations/${name}/sync`)
      const first = await emu.call('POST', `/api/v1/integrations/${name}/sync`)
      expect(first.body).toEqual({ success: true, data: { created: 0, updated: 0, deleted: 0, errors: 0 } })
      const v = await firstLive(emu, 'visits', (x) => x.visitStatus !== 'cancelled')
      await emu.call('PATCH', `/api/v1/visits/${v.id}`, { notes: 'moved' })
      const second = await emu.call('POST', `/api/v1/integrations/${name}/sync`)
      expect(second.body.data).toEqual({ created: 0, updated: 1, deleted: 0, errors: 0 })
      // A repeated trigger is accepted (no 409).
      expect((await emu.call('POST', `/api/v1/integrations/${name}/sync`)).status).toBe(200)
    },
  )
  test('Integrations: GET calendar-a/sync lists changes since the last sync (or since) with next_cursor paging', async () => {
    await emu.call('POST', '/api/v1/integrations/calendar-a/sync')
    const visits = (await emu.get('/api/v1/visits?limit=5')).body.data
    for (const v of visits) await emu.call('PATCH', `/api/v1/visits/${v.id}`, { notes: 'cal' })
    const p1 = (await emu.get('/api/v1/integrations/calendar-a/sync?limit=3')).body
    expect(p1.data).toHaveLength(3)
    for (const c of p1.data)
      expect(c).toMatchObject({
        action: expect.stringMatching(/^(created|updated|deleted)$/),
        visitId: expect.any(String),
        externalEventId: expect.any(String),
      })
    expect(p1.next_cursor).toEqual(expect.any(String))
    const p2 = (await emu.get(`/api/v1/integrations/calendar-a/sync?limit=3&cursor=${p1.next_cursor}`)).body
    expect(p2.data).toHaveLength(2)
    expect(p2.next_cursor).toBeNull()
    expect((await emu.get('/api/v1/integrations/calendar-a/sync?since=2000-01-01T00:00:00Z&limit=100')).body.data.length).toBe(100)
  })
  test('Integrations: calendar-a status holds exactly connected, email, lastSyncAt, calendarId', async () => {
    const s = (await emu.get('/api/v1/integrations/calendar-a/status')).body.data
    expect(Object.keys(s)).toEqual(['connected', 'email', 'lastSyncAt', 'calendarId'])
    expect(s.connected).toBe(true)
  })
  test('Integrations: accounting answers {message, status: queued}', async () => {
    expect((await emu.call('POST', '/api/v1/integrations/accounting/sync')).body).toEqual({
      success: true,
      data: { message: expect.any(String), status: 'queued' },
    })
  })
  test.each(['calendar-a', 'calendar-b', 'accounting'])('Integrations: %s not connected gives INTEGRATION_NOT_CONNECTED', async (name) => {
    await emu.control('POST', `/integrations/${name}`, { connected: false })
    const r = await emu.call('POST', `/api/v1/integrations/${name}/sync`)
    await emu.control('POST', `/integrations/${name}`, { connected: true })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('INTEGRATION_NOT_CONNECTED')
  })
  test('Integrations: the calendar push receiver is unauthenticated by design', async () => {
    expect((await emu.call('POST', '/api/v1/integrations/calendar-a/webhook', {}, { key: null })).status).toBe(200)
  })
  test('Integrations: scope integrations:write is required', async () => {
    const { key } = await emu.key({ scopes: ['jobs:read'] })
    expect((await emu.call('POST', '/api/v1/integrations/accounting/sync', undefined, { key })).status).toBe(403)
  })
})

describe('Legacy routes', () => {
  test('Legacy routes: /api/teams answers data.team; members carry id and isActive', async () => {
    const r = await emu.get('/api/teams', bearer())
    expect(r.body.data.team.length).toBeGreaterThan(0)
    expect(r.body.data.team[0]).toMatchObject({ id: expect.any(String), isActive: expect.any(Boolean) })
  })
  test("Limits: the team listing pages (-1 for all, at most 500 per page, page 1-10000); names page and limit are the emulator's", async () => {
    const all = (await emu.get('/api/teams?limit=-1', bearer())).body.data
    expect(all.team.length).toBe(all.total)
    const p2 = (await emu.get('/api/teams?page=2&limit=3', bearer())).body.data
    expect(p2.team.map((m: any) => m.id)).toEqual(all.team.slice(3, 6).map((m: any) => m.id))
    const big = await boot({ counts: { teamMembers: 520 } })
    try {
      const r = await big.get('/api/teams?limit=600', { key: null, bearer: big.apiKey })
      expect([r.body.data.team.length, r.body.data.total]).toEqual([500, 520])
    } finally {
      await big.close()
    }
    expect((await emu.get('/api/teams?page=10001', bearer())).status).toBe(400)
    expect((await emu.get('/api/teams?page=0', bearer())).status).toBe(400)
    expect((await emu.get('/api/teams?limit=0', bearer())).status).toBe(400)
  })
  test('Legacy routes: /api/taxes answers data.taxes with id, name and a decimal rate', async () => {
    expect((await emu.get('/api/taxes', bearer())).body.data.taxes[0]).toMatchObject({
      id: expect.any(String),
      name: expect.any(String),
      rate: expect.any(Number),
    })
  })
  test('Versioning 4: legacy payloads mix id, recordId and _id', async () => {
    expect((await emu.get('/api/product-service', bearer())).body.data[0]).toHaveProperty('_id')
    expect((await emu.get('/api/job-forms', bearer())).body.data[0]).toHaveProperty('recordId')
    expect((await emu.get('/api/teams', bearer())).body.data.team[0]).toHaveProperty('id')
  })
  test('Legacy routes: POST /api/product-service needs name, type (Service|Product) and price; returns id; no de-duplication', async () => {
    const body = { name: 'Gutter clean', type: 'Service', price: 80 }
    const a = await emu.call('POST', '/api/product-service', body, bearer())
    const b = await emu.call('POST', '/api/product-service', body, bearer())
    expect(a.body.data).toMatchObject({ id: expect.any(String), ...body, isActive: true })
    expect(b.body.data.id).not.toBe(a.body.data.id)
    for (const bad of [
      { type: 'Service', price: 1 },
      { name: 'x', type: 'Labour', price: 1 },
      { name: 'x', type: 'Product' },
    ]) {
      expect((await emu.call('POST', '/api/product-service', bad, bearer())).status).toBe(400)
    }
  })
  test('Legacy routes: /api/companyInfo (withCurrencyData adds currencies) and /api/v1/company-info as data.company', async () => {
    const legacy = (await emu.get('/api/companyInfo?withCurrencyData=true', bearer())).body.data
    expect(legacy).toMatchObject({ companyName: expect.any(String), timezone: expect.any(String), currency: 'USD' })
    expect(legacy.currencies.length).toBeGreaterThan(0)
    expect((await emu.get('/api/v1/company-info')).body.data.company.companyName).toBe(legacy.companyName)
  })
  test('Versioning 2: the legacy job list ignores since and returns an unfiltered list', async () => {
    const all = (await emu.get('/api/jobs?since=2100-01-01T00:00:00Z', bearer())).body.data
    expect(all.length).toBe((await emu.get('/api/v1/jobs')).body.meta.total)
    expect(all[0]).toHaveProperty('_id')
  })
})
