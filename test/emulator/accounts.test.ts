// Many accounts on one emulator: each account is its own data, keys, rate-limit budget, webhooks,
// faults, request log and clock; the API key of a request picks the account, and
// /__emulator/accounts/<id>/... is that account's control API.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startEmulator, type AccountHandle } from '../../emulator/index.js'
import { boot, type Emu } from './harness.js'

let emu: Emu
let a: AccountHandle
let b: AccountHandle
let receiver: http.Server
let hookUrl = ''
const received: string[] = []

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8').on('data', (c: string) => (raw += c))
    req.on('end', () => {
      received.push(raw)
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  emu = await boot({ accounts: 2, allowHttpWebhooks: true })
  ;[a, b] = emu.accounts as [AccountHandle, AccountHandle]
})
afterAll(async () => {
  await emu.close()
  await new Promise((r) => receiver.close(r))
})

const ids = (r: { body: { data: { id: string }[] } }): string[] => r.body.data.map((x) => x.id).sort()
const stateIds = async (x: AccountHandle, resource: string): Promise<string[]> =>
  (await x.control<{ id: string; deleted?: boolean }[]>('GET', `/state/${resource}`))
    .filter((r) => r.deleted !== true)
    .map((r) => r.id)
    .sort()

describe('two accounts on one emulator', () => {
  test('ids, seeds and keys: acct-001 is the default account, acct-002 is seeded with seed + 1', () => {
    expect(emu.accounts.map((x) => [x.id, x.seed, x.url])).toEqual([
      ['acct-001', 1, emu.url],
      ['acct-002', 2, emu.url],
    ])
    expect(a.apiKey).toBe(emu.apiKey)
    expect(b.apiKey).not.toBe(a.apiKey)
    expect(b.apiKey).toMatch(/^svc_live_[0-9a-f]{48}$/)
  })

  test('data: each key reads its own account, and a write through one key is not seen through the other', async () => {
    const fromA = await emu.get('/api/v1/clients?limit=100', { key: a.apiKey })
    const fromB = await emu.get('/api/v1/clients?limit=100', { key: b.apiKey })
    expect(ids(fromA)).toEqual(await stateIds(a, 'clients'))
    expect(ids(fromB)).toEqual(await stateIds(b, 'clients'))
    expect(ids(fromA).filter((id) => ids(fromB).includes(id))).toEqual([])
    const made = await emu.call('POST', '/api/v1/clients', { firstName: 'Only', lastName: 'InB' }, { key: b.apiKey })
    expect(made.status).toBe(200)
    expect((await emu.get(`/api/v1/clients/${made.body.data.id}`, { key: b.apiKey })).status).toBe(200)
    expect((await emu.get(`/api/v1/clients/${made.body.data.id}`, { key: a.apiKey })).status).toBe(404)
    // The unprefixed control API is the first account's.
    expect((await emu.control('GET', '/info')).seed).toBe(1)
    expect((await b.control<{ seed: number }>('GET', '/info')).seed).toBe(2)
  })

  test('keys: a key made in one account (control API or key routes) reads that account only', async () => {
    const { key } = await b.control<{ key: string }>('POST', '/keys', { scopes: ['*'] })
    const viaRoutes = await emu.call('POST', '/api/v1/api-keys', { name: 'b2', scopes: ['*'] }, { key: null, bearer: b.apiKey })
    expect(viaRoutes.status).toBe(201)
    const bClients = ids(await emu.get('/api/v1/clients?limit=100', { key: b.apiKey }))
    for (const k of [key, viaRoutes.body.data.key as string]) {
      expect(ids(await emu.get('/api/v1/clients?limit=100', { key: k }))).toEqual(bClients)
    }
    expect((await a.control<unknown[]>('GET', '/state/api_keys')).length).toBe(1)
    expect((await b.control<unknown[]>('GET', '/state/api_keys')).length).toBe(3)
    // Legacy routes: a support token from an account's control API, or its key as a bearer token.
    const { token } = await b.control<{ token: string }>('POST', '/support-token')
    const items = (r: { body: { data: { _id: string }[] } }) => r.body.data.map((x) => x._id).sort()
    const bItems = items(await emu.get('/api/product-service', { key: null, bearer: token }))
    expect(items(await emu.get('/api/product-service', { key: null, bearer: b.apiKey }))).toEqual(bItems)
    expect(items(await emu.get('/api/product-service', { key: null, bearer: a.apiKey }))).not.toEqual(bItems)
    // A key no account issued: 401, as on a single-account emulator.
    expect((await emu.get('/api/v1/clients', { key: `svc_live_${'0'.repeat(48)}` })).status).toBe(401)
  })

  test('rate limit: one account spending its budget leaves the other its own', async () => {
    await a.control('POST', '/keys/' + (await a.control<{ id: string }[]>('GET', '/state/api_keys'))[0]!.id, { rateLimit: 2 })
    expect((await emu.get('/api/v1/jobs', { key: a.apiKey })).status).toBe(200)
    expect((await emu.get('/api/v1/jobs', { key: a.apiKey })).status).toBe(200)
    expect((await emu.get('/api/v1/jobs', { key: a.apiKey })).status).toBe(429)
    expect((await emu.get('/api/v1/jobs', { key: b.apiKey })).status).toBe(200)
    await a.control('POST', '/clock', { advanceMs: 61_000 })
    await a.control('POST', '/keys/' + (await a.control<{ id: string }[]>('GET', '/state/api_keys'))[0]!.id, { rateLimit: null })
  })

  test('clock: advancing one account moves only its clock', async () => {
    const before = await b.control<{ offsetMs: number }>('GET', '/clock')
    await a.control('POST', '/clock', { advanceMs: 5_000 })
    expect((await b.control<{ offsetMs: number }>('GET', '/clock')).offsetMs).toBe(before.offsetMs)
  })

  test('webhooks: an endpoint registered in one account receives only that account’s events', async () => {
    expect((await emu.call('POST', '/api/v1/webhooks', { url: hookUrl, events: ['client.created'] }, { key: a.apiKey })).status).toBe(200)
    received.length = 0
    await emu.call('POST', '/api/v1/clients', { firstName: 'Hook', lastName: 'B' }, { key: b.apiKey })
    await emu.call('POST', '/api/v1/clients', { firstName: 'Hook', lastName: 'A' }, { key: a.apiKey })
    await a.control('POST', '/deliveries/flush')
    await b.control('POST', '/deliveries/flush')
    expect(received.map((r) => JSON.parse(r).lastName)).toEqual(['A'])
    expect(await b.control('GET', '/state/webhooks')).toEqual([])
    expect((await emu.get('/api/v1/webhooks', { key: b.apiKey })).body.data).toEqual([])
  })

  test('faults and the request log belong to one account', async () => {
    await b.control('POST', '/requests/clear')
    await a.control('POST', '/requests/clear')
    await b.control('POST', '/faults', { route: 'GET /api/v1/invoices', status5xxShare: 1 })
    expect((await emu.get('/api/v1/invoices', { key: b.apiKey })).status).toBeGreaterThanOrEqual(500)
    expect((await emu.get('/api/v1/invoices', { key: a.apiKey })).status).toBe(200)
    expect(await a.control('GET', '/faults')).toEqual([])
    await b.control('POST', '/faults', { clear: true })
    const logA = await a.control<{ status: number; path: string }[]>('GET', '/requests')
    const logB = await b.control<{ status: number; path: string }[]>('GET', '/requests')
    expect(logA.map((r) => [r.path, r.status])).toEqual([['/api/v1/invoices', 200]])
    expect(logB.map((r) => [r.path, r.status >= 500])).toEqual([['/api/v1/invoices', true]])
  })

  test('the control API lists the accounts and answers 404 naming the range for an unknown id', async () => {
    const list = await emu.control('GET', '/accounts')
    expect(list.map((x: { id: string; apiKey: string }) => [x.id, x.apiKey])).toEqual([
      ['acct-001', a.apiKey],
      ['acct-002', b.apiKey],
    ])
    const r = await emu.get('/__emulator/accounts/acct-009/info', { key: null })
    expect(r.status).toBe(404)
    expect(r.body.message).toContain('acct-001...acct-002')
  })
})

describe('keys and sizes', () => {
  test('the default key is the same for the same seed and account, another for another seed; apiKey sets the first', async () => {
    const one = await startEmulator({ seed: 5, accounts: 2 })
    const again = await startEmulator({ seed: 5, accounts: 2 })
    const other = await startEmulator({ seed: 6, apiKey: 'svc_live_walkthrough' })
    try {
      expect(again.accounts.map((x) => x.apiKey)).toEqual(one.accounts.map((x) => x.apiKey))
      expect(other.apiKey).toBe('svc_live_walkthrough')
      const res = await fetch(`${other.url}/api/v1/clients`, { headers: { 'x-api-key': 'svc_live_walkthrough' } })
      expect(res.status).toBe(200)
      const seed6 = await startEmulator({ seed: 6 })
      expect(seed6.apiKey).not.toBe(one.apiKey)
      await seed6.close()
    } finally {
      await Promise.all([one.close(), again.close(), other.close()])
    }
  })

  test('rows sizes an account: about that many records, reference data included', async () => {
    const small = await startEmulator({ rows: 200 })
    try {
      const info = await small.accounts[0]!.control<{ records: number }>('GET', '/info')
      expect(info.records).toBeGreaterThanOrEqual(180)
      expect(info.records).toBeLessThanOrEqual(220)
    } finally {
      await small.close()
    }
  })

  test('200 accounts start, and each key answers with its own account', async () => {
    const many = await startEmulator({ accounts: 200, rows: 60, rateLimit: false })
    try {
      expect(many.accounts.map((x) => x.id).slice(-2)).toEqual(['acct-199', 'acct-200'])
      expect(new Set(many.accounts.map((x) => x.apiKey)).size).toBe(200)
      const companies = new Set<string>()
      for (const x of many.accounts) {
        const res = await fetch(`${many.url}/api/v1/clients?limit=1`, { headers: { 'x-api-key': x.apiKey } })
        expect(res.status).toBe(200)
        const log = await x.control<{ path: string }[]>('GET', '/requests')
        expect(log.map((r) => r.path)).toEqual(['/api/v1/clients'])
        companies.add(JSON.stringify(((await res.json()) as { data: unknown[] }).data))
      }
      // Seeded per account: no two first pages are the same.
      expect(companies.size).toBe(200)
    } finally {
      await many.close()
    }
  })
})
