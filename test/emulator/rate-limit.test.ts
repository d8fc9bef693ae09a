// Conformance: spec "Limits" (60 requests per minute per key, sliding window; per-key override)
// and the 429 body and headers of "Errors". Time moves through the emulator's clock, never sleeps.
import { afterEach, describe, expect, test } from 'vitest'
import { boot, type Emu } from './harness.js'

let emu: Emu | undefined
afterEach(async () => {
  await emu?.close()
  emu = undefined
})

const T0 = '2030-01-01T00:00:00.000Z'
const burst = async (e: Emu, n: number, key?: string): Promise<number[]> => {
  const out: number[] = []
  for (let i = 0; i < n; i++) out.push((await e.get('/api/v1/jobs?limit=1', key === undefined ? {} : { key })).status)
  return out
}

describe('Limits: request rate', () => {
  test('Limits: the 61st request within 60 s gives 429 RATE_LIMITED with X-RateLimit-* and Retry-After', async () => {
    emu = await boot({ rateLimit: 60 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    expect(await burst(emu, 60)).toEqual(Array(60).fill(200))
    const r = await emu.get('/api/v1/jobs')
    expect(r.status).toBe(429)
    expect(r.body).toEqual({ success: false, code: 'RATE_LIMITED', message: expect.any(String) })
    expect(r.headers['x-ratelimit-limit']).toBe('60')
    expect(r.headers['x-ratelimit-remaining']).toBe('0')
    // X-RateLimit-Reset is epoch seconds of the instant a slot frees (T0 + 60 s).
    expect(Number(r.headers['x-ratelimit-reset'])).toBe(Date.parse(T0) / 1000 + 60)
    expect(r.headers['retry-after']).toBe('60')
  })

  test('Limits: the window slides (no fixed-window edge lets 120 through)', async () => {
    emu = await boot({ rateLimit: 60 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    expect(await burst(emu, 30)).toEqual(Array(30).fill(200))
    await emu.control('POST', '/clock', { advanceMs: 30_000 })
    expect(await burst(emu, 30)).toEqual(Array(30).fill(200))
    // 59 s after the first burst: all 60 are still inside the window.
    await emu.control('POST', '/clock', { advanceMs: 29_000 })
    expect((await emu.get('/api/v1/jobs')).status).toBe(429)
    // Just past 60 s the first 30 leave the window: exactly 30 more fit.
    await emu.control('POST', '/clock', { advanceMs: 1_001 })
    expect(await burst(emu, 31)).toEqual([...Array(30).fill(200), 429])
  })

  test('Limits: a refused request does not count against the window', async () => {
    emu = await boot({ rateLimit: 5 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    expect(await burst(emu, 8)).toEqual([200, 200, 200, 200, 200, 429, 429, 429])
    await emu.control('POST', '/clock', { advanceMs: 60_001 })
    expect(await burst(emu, 6)).toEqual([200, 200, 200, 200, 200, 429])
  })

  test('Limits: the limit is per key', async () => {
    emu = await boot({ rateLimit: 3 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    const { key } = await emu.key()
    expect(await burst(emu, 4)).toEqual([200, 200, 200, 429])
    expect(await burst(emu, 3, key)).toEqual([200, 200, 200])
  })

  test('Limits: per-key override (rateLimit at key creation, requests per minute)', async () => {
    emu = await boot({ rateLimit: 60 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    const created = await emu.call(
      'POST',
      '/api/v1/api-keys',
      { name: 'slow', scopes: ['*'], rateLimit: 2 },
      { key: null, bearer: emu.apiKey },
    )
    const key = created.body.data.key as string
    expect(await burst(emu, 3, key)).toEqual([200, 200, 429])
    const r = await emu.get('/api/v1/jobs', { key })
    expect(r.headers['x-ratelimit-limit']).toBe('2')
  })

  test('Limits: sync triggers count like any keyed request', async () => {
    emu = await boot({ rateLimit: 2 })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    expect((await emu.call('POST', '/api/v1/integrations/accounting/sync')).status).toBe(200)
    expect((await emu.call('POST', '/api/v1/integrations/accounting/sync')).status).toBe(200)
    expect((await emu.call('POST', '/api/v1/integrations/accounting/sync')).status).toBe(429)
  })

  test('Limits: rateLimit false disables the default limit', async () => {
    emu = await boot({ rateLimit: false })
    await emu.control('POST', '/clock', { freezeAt: T0 })
    expect((await burst(emu, 120)).every((s) => s === 200)).toBe(true)
  })
})
