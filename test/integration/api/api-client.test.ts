// The client against a loopback server: auth by route family, retries by the spec's rules (on a
// fake clock: no real waiting), 429 pauses, typed errors, malformed bodies, metrics, no key in logs.
import { afterEach, describe, expect, test } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ApiClient, SHARED_CONNECTIONS, type ResponseEvent } from '../../../src/api/api-client.js'
import { ApiError, MalformedResponseError, NetworkError, RateLimitedError, UnauthorizedError } from '../../../src/api/errors.js'
import { FakeClock } from '../../support/fake-clock.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { startLoopback, type Handler, type Loopback } from '../../support/loopback.js'
import { until } from '../../support/daemon-env.js'

const KEY = 'svc_live_0123456789abcdef'
const ok = (data: unknown = [], meta: unknown = { page: 1, limit: 30, total: 0 }) => ({ body: { success: true, data, meta } })

let server: Loopback | undefined
let client: ApiClient | undefined
afterEach(async () => {
  await client?.close()
  await server?.close()
  client = undefined
  server = undefined
})

async function setup(handler: Handler, basePath = '') {
  server = await startLoopback(handler)
  const clock = new FakeClock()
  const logs: string[] = []
  const governor = new RequestGovernor({ limitPerMinute: 600, burst: 50, clock })
  const events: ResponseEvent[] = []
  client = new ApiClient({
    baseUrl: server.baseUrl + basePath,
    apiKey: KEY,
    governor,
    clock,
    logger: createLogger({ level: 'debug', destination: { write: (line: string) => void logs.push(line) } }),
    timeouts: { connectMs: 2_000, headersMs: 2_000, bodyMs: 2_000 },
    onResponse: (e) => events.push(e),
  })
  return { server, client, clock, governor, logs, events }
}

/** Lets real I/O run while fake time jumps to each timer, until the promise settles. */
async function drive<T>(clock: FakeClock, promise: Promise<T>): Promise<T> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  while (!settled) {
    if (!(await clock.advanceToNext())) await new Promise((r) => setTimeout(r, 2))
  }
  return promise
}

describe('ApiClient', () => {
  test('v1 routes carry X-Api-Key, legacy routes Bearer; the base path prefix and query are kept', async () => {
    const { client, server } = await setup(
      (req) => (req.url.pathname.endsWith('/api/taxes') ? { body: { success: true, data: { taxes: [] } } } : ok([{ id: 'a' }])),
      '/proxy',
    )
    const res = await client.get(
      '/api/v1/jobs',
      { sort: 'updatedAt:asc', since: '2025-01-01T00:00:00.000Z', skip: undefined },
      { priority: 'sweep' },
    )
    expect(res).toMatchObject({ status: 200, route: 'GET /api/v1/jobs', data: [{ id: 'a' }], meta: { total: 0 }, attempts: 1 })
    expect(res.date).toMatch(/GMT$/)
    await client.get('/api/taxes', undefined, { priority: 'reconcile' })
    const [v1, legacy] = server.requests
    expect(v1?.url.pathname).toBe('/proxy/api/v1/jobs')
    expect(v1?.url.searchParams.get('since')).toBe('2025-01-01T00:00:00.000Z')
    expect(v1?.url.searchParams.has('skip')).toBe(false)
    expect(v1?.headers['x-api-key']).toBe(KEY)
    expect(v1?.headers.authorization).toBeUndefined()
    expect(legacy?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(legacy?.headers['x-api-key']).toBeUndefined()
  })

  test('5xx is retried after 1 s and 2 s, then succeeds', async () => {
    let n = 0
    const { client, clock, server, logs } = await setup(() => (++n < 3 ? { status: 503, body: { success: false, message: 'down' } } : ok()))
    const t0 = clock.now()
    const res = await drive(clock, client.get('/api/v1/jobs', undefined, { priority: 'sweep' }))
    expect(res.attempts).toBe(3)
    expect(server.requests).toHaveLength(3)
    expect(clock.now() - t0).toBeGreaterThanOrEqual(3_000)
    expect(logs.filter((l) => l.includes('"retrying"'))).toHaveLength(2)
    expect(logs.join('\n')).not.toContain(KEY)
  })

  test('5xx on every attempt: three retries, then an ApiError', async () => {
    const { client, clock, server, events } = await setup(() => ({
      status: 500,
      body: { success: false, code: 'INTERNAL_ERROR', message: 'boom' },
    }))
    const err = await drive(clock, client.get('/api/v1/jobs', undefined, { priority: 'sweep' })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err).toMatchObject({ status: 500, apiCode: 'INTERNAL_ERROR', route: 'GET /api/v1/jobs', retryable: true })
    expect(server.requests).toHaveLength(4)
    expect(events.map((e) => [e.status, e.attempt])).toEqual([
      [500, 1],
      [500, 2],
      [500, 3],
      [500, 4],
    ])
    expect(client.stats()).toEqual({ 'GET /api/v1/jobs 500': 4 })
  })

  test('429 pauses the whole governor for Retry-After, then retries', async () => {
    let n = 0
    const { client, clock, governor, server } = await setup(() =>
      ++n === 1
        ? {
            status: 429,
            headers: { 'retry-after': '5', 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '0' },
            body: { success: false, code: 'RATE_LIMITED', message: 'slow down' },
          }
        : ok(),
    )
    const t0 = clock.now()
    const p = client.get('/api/v1/jobs', undefined, { priority: 'sweep' })
    while (governor.state().pausedUntil === null) await new Promise((r) => setTimeout(r, 2))
    expect(governor.state().pausedUntil).toBe(t0 + 5_000)
    expect(governor.state().effectiveLimit).toBeLessThan(600) // the headers show someone else spent the key
    const res = await drive(clock, p)
    expect(res.attempts).toBe(2)
    expect(server.requests).toHaveLength(2)
    expect(clock.now() - t0).toBeGreaterThanOrEqual(5_000)
  })

  test('429 on every attempt ends in RateLimitedError with the wait', async () => {
    const { client, clock } = await setup(() => ({
      status: 429,
      headers: { 'x-ratelimit-reset': '7' },
      body: { success: false, code: 'RATE_LIMITED', message: 'x' },
    }))
    const err = await drive(clock, client.post('/api/v1/jobs', { clientId: 'x' }, { priority: 'trigger' })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RateLimitedError)
    expect((err as RateLimitedError).retryAfterMs).toBe(7_000)
  })

  test('401: one attempt, a message that says what to do, and never the key', async () => {
    const { client, clock, server, logs } = await setup(() => ({
      status: 401,
      body: { success: false, code: 'UNAUTHORIZED', message: 'Invalid API key' },
    }))
    const err = await drive(clock, client.get('/api/v1/jobs', undefined, { priority: 'sweep' })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(UnauthorizedError)
    expect((err as Error).message).toContain('FSM_API_KEY was rejected (401 UNAUTHORIZED) on GET /api/v1/jobs')
    expect(JSON.stringify(err)).not.toContain(KEY)
    expect((err as Error).message).not.toContain(KEY)
    expect(server.requests).toHaveLength(1)
    expect(logs.join('\n')).not.toContain(KEY)
  })

  test('a create that met a 5xx is not retried (it may have been applied)', async () => {
    const { client, clock, server } = await setup(() => ({ status: 502, body: 'bad gateway' }))
    const err = await drive(clock, client.post('/api/v1/clients', { email: 'a@b.c' }, { priority: 'trigger' })).catch((e: unknown) => e)
    expect(err).toMatchObject({ status: 502, apiMessage: 'bad gateway' })
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]?.body).toBe('{"email":"a@b.c"}')
    expect(server.requests[0]?.headers['content-type']).toBe('application/json')
  })

  test('a reset connection is retried for GET', async () => {
    let n = 0
    const { client, clock, server } = await setup(() => (++n === 1 ? { destroy: true } : ok()))
    const res = await drive(clock, client.get('/api/v1/jobs', undefined, { priority: 'sweep' }))
    expect(res.attempts).toBe(2)
    expect(server.requests).toHaveLength(2)
  })

  test('a refused connection is retried even for a create, then a NetworkError', async () => {
    const { client, clock, server, events } = await setup(() => ok())
    await server.close()
    const err = await drive(clock, client.post('/api/v1/clients', { email: 'a@b.c' }, { priority: 'trigger' })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(NetworkError)
    expect(err).toMatchObject({ code: 'NETWORK_ERROR', errorCode: 'ECONNREFUSED', reachedServer: false, route: 'POST /api/v1/clients' })
    expect(events.map((e) => e.status)).toEqual([0, 0, 0, 0])
  })

  test.each([
    ['not JSON', '<html>hello</html>', 'the body is not JSON'],
    ['no success flag', { data: [] }, 'not the API envelope'],
  ])('a malformed 200 body (%s) names the route', async (_what, body, detail) => {
    const { client, clock } = await setup(() => ({ body }))
    const err = await drive(clock, client.get('/api/v1/jobs/65f0a1b2c3d4e5f601234567', undefined, { priority: 'sweep' })).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(MalformedResponseError)
    expect(err).toMatchObject({ code: 'MALFORMED_RESPONSE', route: 'GET /api/v1/jobs/{id}' })
    expect((err as Error).message).toContain('on GET /api/v1/jobs/65f0a1b2c3d4e5f601234567')
    expect((err as Error).message).toContain(detail)
  })

  test('an abort ends the call without retrying', async () => {
    const { client, clock, server } = await setup(() => ({ status: 503, body: { success: false, message: 'x' } }))
    const controller = new AbortController()
    const p = client.get('/api/v1/jobs', undefined, { priority: 'sweep', signal: controller.signal })
    while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 2))
    controller.abort(new Error('stop'))
    await expect(drive(clock, p)).rejects.toThrow('stop')
    expect(server.requests).toHaveLength(1)
  })
})

test('clients that share the pool of their origin (a daemon of many accounts) never open more than SHARED_CONNECTIONS sockets to it together', async () => {
  let connections = 0
  let open = 0
  const shared = http.createServer((_req, res) => {
    // Answers a little later, so that every client's request is in flight at once.
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true, data: [] })), 50)
  })
  shared.on('connection', (socket) => {
    connections++
    open++
    socket.on('close', () => open--)
  })
  await new Promise<void>((r) => shared.listen(0, '127.0.0.1', r))
  const { port } = shared.address() as AddressInfo
  const clients = Array.from(
    { length: SHARED_CONNECTIONS + 36 },
    (_, i) =>
      new ApiClient({
        baseUrl: `http://127.0.0.1:${port}`,
        apiKey: `${KEY}${i}`,
        governor: new RequestGovernor({ limitPerMinute: 600 }),
        logger: createLogger({ level: 'silent' }),
        sharedPool: true,
      }),
  )
  try {
    const answers = await Promise.all(clients.map((c) => c.get('/api/v1/jobs', undefined, { priority: 'sweep' })))
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect(connections).toBeGreaterThan(1)
    expect(connections).toBeLessThanOrEqual(SHARED_CONNECTIONS)
    // Closed with its last client.
    await Promise.all(clients.slice(1).map((c) => c.close()))
    expect(open).toBeGreaterThan(0)
    await clients[0]!.close()
    await until('the shared pool closed', () => open === 0, 5_000)
  } finally {
    await Promise.all(clients.map((c) => c.close()))
    await new Promise((r) => shared.close(r))
  }
})
