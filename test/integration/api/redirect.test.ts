// A 301/302 from the upstream (a moved API, a proxy) used to fail as "Request rejected (301)" with
// whatever body came along; the error now names where the redirect pointed and what to change.
import { afterEach, expect, test } from 'vitest'
import { ApiClient } from '../../../src/api/api-client.js'
import { ApiError } from '../../../src/api/errors.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { startLoopback, type Loopback } from '../../support/loopback.js'

let server: Loopback | undefined
let client: ApiClient | undefined
afterEach(async () => {
  await client?.close()
  await server?.close()
})

test.each([
  [301, 'https://api.moved.example.com/api/v1/jobs?limit=1', 'to https://api.moved.example.com/api/v1/jobs?limit=1'],
  [302, '/login', 'to /login'],
  [302, undefined, 'with no Location header'],
])('a %i upstream answer names its Location in the error', async (status, location, said) => {
  server = await startLoopback(() => ({ status, headers: location === undefined ? {} : { location }, body: '<html>Moved</html>' }))
  client = new ApiClient({
    baseUrl: server.baseUrl,
    apiKey: 'svc_live_0123456789abcdef',
    governor: new RequestGovernor({ limitPerMinute: 600 }),
    logger: createLogger({ level: 'silent', destination: { write: () => undefined } }),
    timeouts: { connectMs: 2_000, headersMs: 2_000, bodyMs: 2_000 },
  })
  const err = await client.get('/api/v1/jobs', { limit: '1' }, { priority: 'sweep' }).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(ApiError)
  expect((err as ApiError).status).toBe(status)
  expect((err as ApiError).retryable).toBe(false)
  expect((err as Error).message).toBe(
    `Redirected (${status}) on GET /api/v1/jobs ${said}: fsm-sync does not follow redirects; set FSM_BASE_URL to the address the API answers on now`,
  )
  // Not retried: one request.
  expect(server.requests).toHaveLength(1)
})
