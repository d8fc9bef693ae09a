// The control API (emulator/README.md) and the seeded account: determinism, counts, state with
// soft-deleted records, web-app mutations, the clock, faults, the request log, counters, churn.
import { afterEach, describe, expect, test, vi } from 'vitest'
import { startEmulator } from '../../emulator/index.js'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu | undefined
afterEach(async () => {
  await emu?.close()
  emu = undefined
})

const NOW = () => Date.parse('2030-06-15T12:00:00.000Z')

describe('Seeded account', () => {
  test('Seeding: 10,000+ records are generated (counted through the control API)', async () => {
    emu = await boot({ counts: { clients: 2000, jobs: 2000, visitsPerJob: 2, invoices: 2000 } })
    const info = await emu.control('GET', '/info')
    expect(info.records).toBeGreaterThanOrEqual(10_000)
    expect((await emu.get('/api/v1/visits?limit=1')).body.meta.total).toBe(4000)
  })
  test('Seeding: the same seed gives the same data (ids, names, timestamps); another seed differs', async () => {
    const a = await boot({ seed: 42, now: NOW })
    const b = await boot({ seed: 42, now: NOW })
    const c = await boot({ seed: 43, now: NOW })
    for (const r of ['clients', 'jobs', 'visits', 'invoices', 'objects/equipment', 'team']) {
      expect(await a.control('GET', `/state/${r}`)).toEqual(await b.control('GET', `/state/${r}`))
    }
    expect(await a.control('GET', '/state/clients')).not.toEqual(await c.control('GET', '/state/clients'))
    await Promise.all([a.close(), b.close(), c.close()])
  })
  test('Seeding: realistic records: several visits per job, invoices with line items and taxes, timestamps in the past weeks', async () => {
    emu = await boot({ now: NOW })
    const jobs = await emu.control('GET', '/state/jobs')
    expect(jobs.every((j: any) => j.visits.length >= 2 && j.visits.length <= 3)).toBe(true)
    const inv = await emu.control('GET', '/state/invoices')
    expect(inv.every((i: any) => i.items.length >= 1 && i.items.every((it: any) => it.taxes.length >= 1))).toBe(true)
    const clients = await emu.control('GET', '/state/clients')
    for (const c of clients) {
      expect(c.updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      expect(Date.parse(c.updatedAt)).toBeLessThan(NOW())
      expect(Date.parse(c.createdAt)).toBeGreaterThan(NOW() - 50 * 86_400_000)
    }
  })
  test('startEmulator: the handle key is a *-scoped svc_live_ key', async () => {
    const h = await startEmulator({ counts: { clients: 1, jobs: 1, invoices: 1 } })
    expect(h.apiKey).toMatch(/^svc_live_/)
    expect(h.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    await h.close()
  })
})

describe('Control API', () => {
  test('state: every record in the API shape, soft-deleted ones included with deleted: true', async () => {
    emu = await boot()
    const inv = await firstLive(emu, 'invoices')
    // The list-row shape: the single GET adds only `signatures` at the end.
    const { signatures, ...api } = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data
    expect(Array.isArray(signatures)).toBe(true)
    const { deleted, ...rest } = inv
    expect(deleted).toBe(false)
    expect(JSON.stringify(rest)).toBe(JSON.stringify(api))
    await emu.call('DELETE', `/api/v1/invoices/${inv.id}`)
    expect((await emu.control('GET', '/state/invoices')).find((x: any) => x.id === inv.id).deleted).toBe(true)
  })
  test('mutate: bulk touch of N records with caller fields; updatedAt from the clock or as set', async () => {
    emu = await boot()
    const touched = await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 5, fields: { notes: 'touched' } })
    expect(touched).toHaveLength(5)
    const set = await emu.control('POST', '/mutate', {
      resource: 'jobs',
      op: 'update',
      id: (await firstLive(emu, 'jobs')).id,
      fields: { updatedAt: '2031-01-01T00:00:00.000Z', priority: 'low' },
    })
    expect(set[0]).toMatchObject({ updatedAt: '2031-01-01T00:00:00.000Z', priority: 'low' })
    const created = await emu.control('POST', '/mutate', { resource: 'invoices', op: 'create', count: 3, fields: { title: 'made in app' } })
    expect(created.map((i: any) => i.title)).toEqual(['made in app', 'made in app', 'made in app'])
    const rec = await emu.control('POST', '/mutate', {
      resource: 'objects/inspections',
      op: 'create',
      fields: { data: { title: 'app record' }, stage: 'passed' },
    })
    expect(rec[0]).toMatchObject({ stage: 'passed', data: { title: 'app record', status: 'passed' } })
  })
  test('mutate: a body without a resource is a 400 naming it, not a crash', async () => {
    emu = await boot()
    const r = await emu.call('POST', '/__emulator/mutate', { op: 'update' }, { key: null })
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/'resource' is required: clients, jobs/)
  })
  test('mutate: delete is soft (404 over the API afterwards)', async () => {
    emu = await boot()
    const j = await firstLive(emu, 'jobs')
    await emu.control('POST', '/mutate', { resource: 'jobs', op: 'delete', id: j.id })
    expect((await emu.get(`/api/v1/jobs/${j.id}`)).status).toBe(404)
  })
  test('clock: freezeAt makes 150+ writes share one updatedAt; unfreezing never moves time backwards', async () => {
    emu = await boot({ counts: { clients: 200 } })
    await emu.control('POST', '/clock', { freezeAt: '2035-01-01T00:00:00.000Z' })
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 160 })
    const tie = (await emu.control('GET', '/state/clients')).filter((c: any) => c.updatedAt === '2035-01-01T00:00:00.000Z')
    expect(tie).toHaveLength(160)
    const clock = await emu.control('POST', '/clock', { freezeAt: null })
    expect(Date.parse(clock.now)).toBeGreaterThanOrEqual(Date.parse('2035-01-01T00:00:00.000Z'))
    expect((await emu.control('POST', '/clock', { advanceMs: 1000 })).frozen).toBe(false)
  })
  test('faults: a 5xx share of 1 answers 5xx; force429 answers 429 with Retry-After count times; clear restores', async () => {
    emu = await boot()
    await emu.control('POST', '/faults', { route: 'GET /api/v1/clients', status5xxShare: 1 })
    expect((await emu.get('/api/v1/clients')).status).toBeGreaterThanOrEqual(500)
    expect((await emu.get('/api/v1/jobs')).status).toBe(200)
    await emu.control('POST', '/faults', { clear: true })
    await emu.control('POST', '/faults', { route: 'GET /api/v1/*', force429: { count: 2, retryAfterSeconds: 7 } })
    const r = await emu.get('/api/v1/invoices')
    expect(r.status).toBe(429)
    expect(r.headers['retry-after']).toBe('7')
    expect(r.body.code).toBe('RATE_LIMITED')
    expect((await emu.get('/api/v1/visits')).status).toBe(429)
    expect((await emu.get('/api/v1/visits')).status).toBe(200)
  })
  test('faults: resetShare 1 resets the connection', async () => {
    emu = await boot()
    await emu.control('POST', '/faults', { route: '/api/v1/jobs', resetShare: 1 })
    await expect(emu.get('/api/v1/jobs')).rejects.toThrow()
  })
  test('faults: ignorePage answers page 1 whatever page asks; zonelessTimes drops the Z of every datetime', async () => {
    emu = await boot({ counts: { clients: 30 } })
    const page1 = (await emu.get('/api/v1/clients?limit=10&page=1')).body.data.map((c: any) => c.id)
    await emu.control('POST', '/faults', { route: 'GET /api/v1/clients', ignorePage: true })
    expect((await emu.get('/api/v1/clients?limit=10&page=3')).body.data.map((c: any) => c.id)).toEqual(page1)
    expect((await emu.control('GET', '/requests?path=/api/v1/clients')).at(-1).query).toContain('page=3')
    await emu.control('POST', '/faults', { clear: true })
    await emu.control('POST', '/faults', { route: 'GET /api/v1/clients*', zonelessTimes: true })
    const one = (await emu.get('/api/v1/clients?limit=1')).body.data[0]
    const upstream = (await emu.control('GET', '/state/clients')).find((c: any) => c.id === one.id)
    expect(one.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/)
    expect(`${one.updatedAt}Z`).toBe(upstream.updatedAt)
    expect((await emu.get('/api/v1/jobs?limit=1')).body.data[0].updatedAt).toMatch(/Z$/)
  })
  test('requests and counters: each request logged with time, key id (never the key), method, path, status', async () => {
    emu = await boot()
    await emu.get('/api/v1/clients?limit=1')
    await emu.get('/api/v1/clients', { key: 'svc_live_nope' })
    const log = await emu.control('GET', '/requests?path=/api/v1/clients')
    expect(log.map((e: any) => [e.method, e.path, e.status])).toEqual([
      ['GET', '/api/v1/clients', 200],
      ['GET', '/api/v1/clients', 401],
    ])
    expect(log[0]).toMatchObject({ time: expect.any(String), keyId: expect.any(String), query: '?limit=1' })
    expect(JSON.stringify(log)).not.toContain(emu.apiKey)
    const counters = await emu.control('GET', '/counters')
    expect(counters['requests.status.401']).toBe(1)
  })
  test('reset: reseeds with a new seed and counts; the handle key keeps working', async () => {
    emu = await boot()
    await emu.control('POST', '/reset', { seed: 9, counts: { clients: 7 } })
    expect((await emu.get('/api/v1/clients')).body.meta.total).toBe(7)
  })
  test('churn: background creates, updates and deletes at a rate; stop ends it', async () => {
    emu = await boot()
    const before = await emu.control('GET', '/state/clients')
    await emu.control('POST', '/churn', { ratePerSecond: 500, mix: { resources: ['clients', 'objects'] } })
    await vi.waitFor(async () => expect((await emu!.control('GET', '/churn')).done).toBeGreaterThan(100), { timeout: 10_000, interval: 50 })
    const status = await emu.control('POST', '/churn', { stop: true })
    expect(status.running).toBe(false)
    expect(status.errors).toBe(0)
    const after = await emu.control('GET', '/state/clients')
    expect(after.length).toBeGreaterThan(before.length)
    expect(after.some((c: any) => c.deleted)).toBe(true)
  })
  test('keys: a key with given scopes, expiry and active flag, without the API', async () => {
    emu = await boot()
    const k = await emu.key({ scopes: ['clients:read'] })
    expect(k.key).toMatch(/^svc_live_/)
    expect((await emu.get('/api/v1/clients', { key: k.key })).status).toBe(200)
    await emu.control('POST', `/keys/${k.id}`, { active: false })
    expect((await emu.get('/api/v1/clients', { key: k.key })).status).toBe(401)
  })
  test('objects/{slug}/fields: a field added at runtime is in the schema and accepted in data', async () => {
    emu = await boot()
    await emu.control('POST', '/objects/equipment/fields', { name: 'warrantyEnds', type: 'text' })
    expect((await emu.get('/api/v1/objects/equipment/schema')).body.data.fields.map((f: any) => f.name)).toContain('warrantyEnds')
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'n', warrantyEnds: '2031' } })).status).toBe(201)
  })
})
