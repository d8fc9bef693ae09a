// Error mapping: each failure answer becomes a typed error with the route, status, the API's code
// and message, and a message that says what to do; the key never appears.
import { describe, expect, test } from 'vitest'
import { apiErrorFor, networkErrorFor } from '../../../src/api/error-mapping.js'
import * as errors from '../../../src/api/errors.js'
import {
  ApiError,
  ConflictError,
  ForbiddenError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  PagingStalledError,
  RateLimitedError,
  RequestDeadlineError,
  UnauthorizedError,
} from '../../../src/api/errors.js'
import { templatePath } from '../../../src/api/routes.js'

const where = { route: 'GET /api/v1/jobs', target: 'GET /api/v1/jobs' }

describe('error codes', () => {
  const data = { status: 400, apiCode: 'SOME_CODE', apiMessage: 'm', ...where, retryable: false }
  const cause = { cause: new Error('underneath') }
  const net = { ...where, errorCode: 'ECONNRESET', reachedServer: true }
  const made: [string, Error & { code: string }][] = [
    ['ApiError', new ApiError(data, cause)],
    ['UnauthorizedError', new UnauthorizedError(data, cause)],
    ['ForbiddenError', new ForbiddenError(data, cause)],
    ['NotFoundError', new NotFoundError(data, cause)],
    ['ConflictError', new ConflictError(data, cause)],
    ['RateLimitedError', new RateLimitedError(data, { ...cause, retryAfterMs: 1_000 })],
    ['NetworkError', new NetworkError(net, cause)],
    ['RequestDeadlineError', new RequestDeadlineError({ ...where, deadlineMs: 5_000 }, cause)],
    ['MalformedResponseError', new MalformedResponseError({ ...where, status: 200, detail: 'd' }, cause)],
    ['PagingStalledError', new PagingStalledError({ ...where, requests: 12, detail: 'd' }, cause)],
  ]

  test.each([
    ['ApiError', 'API_ERROR'],
    ['UnauthorizedError', 'API_UNAUTHORIZED'],
    ['ForbiddenError', 'API_FORBIDDEN'],
    ['NotFoundError', 'API_NOT_FOUND'],
    ['ConflictError', 'API_CONFLICT'],
    ['RateLimitedError', 'API_RATE_LIMITED'],
    ['NetworkError', 'NETWORK_ERROR'],
    ['RequestDeadlineError', 'REQUEST_DEADLINE'],
    ['MalformedResponseError', 'MALFORMED_RESPONSE'],
    ['PagingStalledError', 'PAGING_STALLED'],
  ])('%s has the code %s, and keeps its name and cause', (name, code) => {
    const err = made.find(([n]) => n === name)?.[1]
    expect(err?.code).toBe(code)
    expect(err?.name).toBe(name)
    expect(err?.cause).toBe(cause.cause)
  })

  test('every error class of the module is in the table, each with a code no other class has', () => {
    const classes = Object.entries(errors)
      .filter(([, v]) => typeof v === 'function' && v.prototype instanceof Error)
      .map(([k]) => k)
    expect(classes.sort()).toEqual(made.map(([n]) => n).sort())
    expect(new Set(made.map(([, e]) => e.code)).size).toBe(made.length)
  })

  test('the upstream code from the body stays apiCode, the system code of a network failure errorCode', () => {
    expect(made[1]?.[1]).toMatchObject({ code: 'API_UNAUTHORIZED', apiCode: 'SOME_CODE' })
    expect(made[6]?.[1]).toMatchObject({ code: 'NETWORK_ERROR', errorCode: 'ECONNRESET' })
    expect(made[7]?.[1]).toMatchObject({ code: 'REQUEST_DEADLINE', errorCode: 'REQUEST_DEADLINE' })
  })
})

describe('apiErrorFor', () => {
  test('401 names the key, the route and what to do', () => {
    const err = apiErrorFor(401, { success: false, code: 'UNAUTHORIZED', message: 'Invalid API key' }, where)
    expect(err).toBeInstanceOf(UnauthorizedError)
    expect(err).toMatchObject({
      code: 'API_UNAUTHORIZED',
      kind: 'unauthorized',
      status: 401,
      apiCode: 'UNAUTHORIZED',
      route: 'GET /api/v1/jobs',
      retryable: false,
    })
    expect(err.message).toBe(
      'FSM_API_KEY was rejected (401 UNAUTHORIZED) on GET /api/v1/jobs: the key is invalid, revoked or expired; create a new one in the account settings',
    )
    expect(err.cause).toBeDefined()
  })

  test('403 names the missing scope', () => {
    const err = apiErrorFor(403, { success: false, code: 'FORBIDDEN', message: 'Missing required scope: jobs:read' }, where)
    if (!(err instanceof ForbiddenError)) throw new Error('expected a ForbiddenError')
    expect(err.missingScope).toBe('jobs:read')
    expect(err.message).toContain('lacks the scope jobs:read (403 FORBIDDEN) on GET /api/v1/jobs')
  })

  test('403 without the usual message still reads well', () => {
    const err = apiErrorFor(403, { success: false, message: 'nope' }, where)
    expect(err).toMatchObject({ kind: 'forbidden', missingScope: undefined })
    expect(err.message).toContain('lacks a required scope (403)')
  })

  test.each([
    [404, NotFoundError, 'not-found', false],
    [409, ConflictError, 'conflict', false],
    [400, ApiError, 'client', false],
    [500, ApiError, 'server', true],
    [503, ApiError, 'server', true],
  ])('%i -> %o', (status, cls, kind, retryable) => {
    const err = apiErrorFor(status, { success: false, error: 'Unknown field(s) in data: x', message: 'Unknown field(s) in data: x' }, where)
    expect(err).toBeInstanceOf(cls)
    expect(err).toMatchObject({ kind, retryable, apiMessage: 'Unknown field(s) in data: x' })
    expect(err.message).toContain(`(${status}) on GET /api/v1/jobs: Unknown field(s) in data: x`)
  })

  test('429 carries retryAfterMs', () => {
    const err = apiErrorFor(429, { success: false, code: 'RATE_LIMITED', message: 'Too many requests' }, where, 4_000)
    if (!(err instanceof RateLimitedError)) throw new Error('expected a RateLimitedError')
    expect(err.retryAfterMs).toBe(4_000)
    expect(err.retryable).toBe(true)
  })

  test('a nested error object or a non-JSON body still gives a message', () => {
    expect(apiErrorFor(400, { success: false, error: { detail: 'x' } }, where).apiMessage).toBeUndefined()
    expect(apiErrorFor(502, '<html>Bad gateway</html>', where).apiMessage).toBe('<html>Bad gateway</html>')
  })
})

describe('networkErrorFor', () => {
  test('a refused connection provably never reached the server; a reset may have', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
    expect(networkErrorFor(refused, where)).toMatchObject({ code: 'NETWORK_ERROR', errorCode: 'ECONNREFUSED', reachedServer: false })
    expect(networkErrorFor(reset, where)).toMatchObject({ errorCode: 'ECONNRESET', reachedServer: true, retryable: true })
    expect(networkErrorFor(new Error('x', { cause: { code: 'EPIPE' } }), where).errorCode).toBe('Error')
  })
})

describe('templatePath', () => {
  test.each([
    ['/api/v1/jobs/65f0a1b2c3d4e5f601234567', '/api/v1/jobs/{id}'],
    ['/api/v1/objects/vehicles/65f0a1b2c3d4e5f601234567', '/api/v1/objects/vehicles/{id}'],
    ['/api/v1/objects/vehicles/by/vin/ABC123', '/api/v1/objects/vehicles/by/vin/{value}'],
    ['/api/v1/clients', '/api/v1/clients'],
  ])('%s -> %s', (path, template) => {
    expect(templatePath(path)).toBe(template)
  })
})
