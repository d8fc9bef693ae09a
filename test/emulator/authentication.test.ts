// Conformance: spec "Authentication" and "Errors" (body shapes of auth failures).
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, type CallOptions, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

describe('Authentication', () => {
  const cases: [string, () => CallOptions | Promise<CallOptions>, string, number][] = [
    ['2: a missing key gives 401 UNAUTHORIZED', () => ({ key: null }), '/api/v1/clients', 401],
    ['1: a key without the svc_live_ prefix is malformed: 401', () => ({ key: 'sk_test_abc' }), '/api/v1/clients', 401],
    ['3: an unknown svc_live_ key gives 401', () => ({ key: 'svc_live_000000000000000000000000' }), '/api/v1/clients', 401],
    ['2: Authorization: Bearer is accepted on v1', () => ({ key: null, bearer: emu.apiKey }), '/api/v1/clients', 200],
    [
      '2: X-Api-Key is evaluated first (bad X-Api-Key, good Bearer): 401',
      () => ({ key: 'svc_live_bad', bearer: emu.apiKey }),
      '/api/v1/clients',
      401,
    ],
    [
      '2: X-Api-Key is evaluated first (good X-Api-Key, bad Bearer): 200',
      () => ({ key: emu.apiKey, bearer: 'svc_live_bad' }),
      '/api/v1/clients',
      200,
    ],
    [
      '4: a login JWT on a v1 route gives 401',
      async () => ({ key: null, bearer: (await emu.control('POST', '/support-token')).token }),
      '/api/v1/clients',
      401,
    ],
    ['3: an inactive key gives 401', async () => ({ key: (await emu.key({ active: false })).key }), '/api/v1/clients', 401],
    [
      '3: an expired key gives 401',
      async () => ({ key: (await emu.key({ expiresAt: '2000-01-01T00:00:00Z' })).key }),
      '/api/v1/clients',
      401,
    ],
    [
      '5: a key without the route scope gives 403',
      async () => ({ key: (await emu.key({ scopes: ['jobs:read'] })).key }),
      '/api/v1/clients',
      403,
    ],
    ['5: the wildcard scope grants everything', async () => ({ key: (await emu.key({ scopes: ['*'] })).key }), '/api/v1/invoices', 200],
    ['5: a read scope authorises its list', async () => ({ key: (await emu.key({ scopes: ['visits:read'] })).key }), '/api/v1/visits', 200],
    [
      '5: integrations:write does not substitute for webhooks:manage',
      async () => ({ key: (await emu.key({ scopes: ['integrations:write'] })).key }),
      '/api/v1/webhooks',
      403,
    ],
    ['7: legacy routes ignore X-Api-Key: 401', () => ({ key: emu.apiKey }), '/api/taxes', 401],
    [
      '7: legacy routes take the key as Bearer, with no scope check',
      async () => ({ key: null, bearer: (await emu.key({ scopes: ['jobs:read'] })).key }),
      '/api/taxes',
      200,
    ],
    [
      '7: support-issued JWTs work on legacy routes',
      async () => ({ key: null, bearer: (await emu.control('POST', '/support-token')).token }),
      '/api/teams',
      200,
    ],
    [
      'Endpoints, API keys: key routes are authorised by the Authorization header, scopes not enforced',
      async () => ({ key: null, bearer: (await emu.key({ scopes: ['jobs:read'] })).key }),
      '/api/v1/api-keys',
      200,
    ],
  ]
  test.each(cases)('Authentication %s', async (_name, options, path, status) => {
    const r = await emu.get(path, await options())
    expect(r.status).toBe(status)
    if (status === 401) expect(r.body).toEqual({ success: false, code: 'UNAUTHORIZED', message: expect.any(String) })
  })

  test('Authentication 5: a 403 names the missing scope (Missing required scope: <scope>, code FORBIDDEN)', async () => {
    const { key } = await emu.key({ scopes: ['clients:read'] })
    const r = await emu.call('POST', '/api/v1/clients', { firstName: 'X' }, { key })
    expect(r.status).toBe(403)
    expect(r.body).toEqual({ success: false, code: 'FORBIDDEN', message: 'Missing required scope: clients:write' })
  })

  // The scope table: every v1 family checks its own scope; a key holding every other scope is refused.
  const ID = 'aaaaaaaaaaaaaaaaaaaaaaaa'
  // The spec's scope table (not the emulator's own list, so a scope missing there shows here).
  const SCOPES = [
    'clients:read',
    'clients:write',
    'jobs:read',
    'jobs:write',
    'visits:read',
    'visits:write',
    'invoices:read',
    'invoices:write',
    'integrations:write',
    'webhooks:manage',
    'objects:read',
    'objects:write',
    'items:write',
  ]
  const scoped: [string, string, string][] = [
    ['GET', '/api/v1/clients', 'clients:read'],
    ['GET', `/api/v1/clients/${ID}`, 'clients:read'],
    ['POST', '/api/v1/clients', 'clients:write'],
    ['PUT', `/api/v1/clients/${ID}`, 'clients:write'],
    ['DELETE', `/api/v1/clients/${ID}`, 'clients:write'],
    ['GET', '/api/v1/jobs', 'jobs:read'],
    ['POST', '/api/v1/jobs', 'jobs:write'],
    ['PUT', `/api/v1/jobs/${ID}`, 'jobs:write'],
    ['DELETE', `/api/v1/jobs/${ID}`, 'jobs:write'],
    ['GET', '/api/v1/visits', 'visits:read'],
    ['GET', `/api/v1/visits/${ID}`, 'visits:read'],
    ['PATCH', `/api/v1/visits/${ID}`, 'visits:write'],
    ['GET', '/api/v1/invoices', 'invoices:read'],
    ['GET', `/api/v1/invoices/${ID}/payment-link`, 'invoices:read'],
    ['POST', '/api/v1/invoices', 'invoices:write'],
    ['PUT', `/api/v1/invoices/${ID}`, 'invoices:write'],
    ['DELETE', `/api/v1/invoices/${ID}`, 'invoices:write'],
    ['POST', '/api/v1/integrations/calendar-a/sync', 'integrations:write'],
    ['GET', '/api/v1/integrations/calendar-a/status', 'integrations:write'],
    ['POST', '/api/v1/integrations/accounting/sync', 'integrations:write'],
    ['GET', '/api/v1/webhooks', 'webhooks:manage'],
    ['POST', '/api/v1/webhooks', 'webhooks:manage'],
    ['GET', `/api/v1/webhooks/${ID}/deliveries`, 'webhooks:manage'],
    ['GET', '/api/v1/objects', 'objects:read'],
    ['GET', '/api/v1/objects/equipment/schema', 'objects:read'],
    ['GET', '/api/v1/objects/equipment', 'objects:read'],
    ['POST', '/api/v1/objects/equipment', 'objects:write'],
    ['PATCH', `/api/v1/objects/equipment/${ID}`, 'objects:write'],
    ['PUT', '/api/v1/objects/equipment/by/name/x', 'objects:write'],
  ]
  test.each(scoped)('Authentication 5: %s %s needs %s (every other scope is not enough)', async (method, path, scope) => {
    const { key } = await emu.key({ scopes: SCOPES.filter((s) => s !== scope) })
    const r = await emu.call(method, path, method === 'GET' || method === 'DELETE' ? undefined : {}, { key })
    expect(r.status).toBe(403)
    expect(r.body).toEqual({ success: false, code: 'FORBIDDEN', message: `Missing required scope: ${scope}` })
  })

  test('Authentication 3: a key expires when the clock passes expiresAt', async () => {
    const soon = new Date(Date.now() + 3_600_000).toISOString()
    const { key } = await emu.key({ expiresAt: soon })
    expect((await emu.get('/api/v1/jobs', { key })).status).toBe(200)
    await emu.control('POST', '/clock', { advanceMs: 2 * 3_600_000 })
    expect((await emu.get('/api/v1/jobs', { key })).status).toBe(401)
  })

  test('Authentication 6: an unknown route is 404 NOT_FOUND; there is no /api/v1/team', async () => {
    const r = await emu.get('/api/v1/team')
    expect(r.status).toBe(404)
    expect(r.body.success).toBe(false)
  })
})

describe('API keys', () => {
  const admin = (): CallOptions => ({ key: null, bearer: emu.apiKey })

  test('API keys: create returns the plaintext once with the svc_live_ prefix; it authenticates; list and get never show it', async () => {
    const created = await emu.call('POST', '/api/v1/api-keys', { name: 'reader', scopes: ['clients:read'] }, admin())
    expect(created.status).toBeLessThan(300)
    const { key, id } = created.body.data
    expect(key).toMatch(/^svc_live_/)
    expect((await emu.get('/api/v1/clients', { key })).status).toBe(200)
    const list = await emu.get('/api/v1/api-keys', admin())
    expect(JSON.stringify(list.body)).not.toContain(key)
    const one = await emu.get(`/api/v1/api-keys/${id}`, admin())
    expect(one.body.data).toMatchObject({ id, name: 'reader', scopes: ['clients:read'], expiresAt: null })
    expect(one.body.data.key).toBeUndefined()
    expect(one.body.data.lastUsedAt).toEqual(expect.any(String))
  })

  test('API keys: DELETE revokes permanently; later requests with the key give 401', async () => {
    const { key, id } = (await emu.call('POST', '/api/v1/api-keys', { name: 'temp', scopes: ['*'] }, admin())).body.data
    expect((await emu.call('DELETE', `/api/v1/api-keys/${id}`, undefined, admin())).status).toBe(200)
    expect((await emu.get('/api/v1/clients', { key })).status).toBe(401)
  })

  const bad: [string, unknown][] = [
    ['name is required', { scopes: ['*'] }],
    ['an unknown scope is refused', { name: 'x', scopes: ['clients:admin'] }],
    ['rateLimit must be a positive integer', { name: 'x', rateLimit: 'fast' }],
  ]
  test.each(bad)('API keys: create validation, %s (400)', async (_n, body) => {
    expect((await emu.call('POST', '/api/v1/api-keys', body, admin())).status).toBe(400)
  })

  test('API keys: expiresAt is not part of the update contract (400)', async () => {
    const { id } = (await emu.call('POST', '/api/v1/api-keys', { name: 'u' }, admin())).body.data
    expect((await emu.call('PUT', `/api/v1/api-keys/${id}`, { expiresAt: '2030-01-01T00:00:00Z' }, admin())).status).toBe(400)
    expect((await emu.call('PUT', `/api/v1/api-keys/${id}`, { name: 'renamed' }, admin())).body.data.name).toBe('renamed')
  })

  test('Authentication 8: a key on the key routes can mint a broader key for itself', async () => {
    const { key } = await emu.key({ scopes: ['jobs:read'] })
    const minted = await emu.call('POST', '/api/v1/api-keys', { name: 'broader', scopes: ['*'] }, { key: null, bearer: key })
    expect(minted.body.data.scopes).toEqual(['*'])
  })
})
