// Integer settings from the environment, flags or the file used to go through z.coerce.number(),
// which reads FSM_RATE_LIMIT=0x10 as 16 (and "1e2", " 60 ", "" as numbers too). Only decimal
// integers are accepted now, each refusal naming the key as written.
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../../src/config/index.js'
import { issuesOf } from '../../support/config-file.js'

describe('integer settings take decimal integers only', () => {
  test.each(['0x10', '1e2', ' 60', '60 ', '0b11', '0o17', '12.0', '+60', 'Infinity', 'abc'])('FSM_RATE_LIMIT=%j is refused, named', (v) => {
    expect(issuesOf(() => loadConfig({ env: { FSM_RATE_LIMIT: v } }))).toEqual([
      { key: 'FSM_RATE_LIMIT', message: 'must be a whole number in decimal digits, e.g. 60' },
    ])
  })

  test('every integer key from the environment, flags and file: hex refused, decimal taken', () => {
    expect(
      issuesOf(() => loadConfig({ env: { FSM_HTTP_PORT: '0x1F90' }, flags: { 'rate-limit': '0x10' } }))
        .map((i) => i.key)
        .sort(),
    ).toEqual(['--rate-limit', 'FSM_HTTP_PORT'])
    const nested = {
      http: { connectTimeoutMs: '0x10', headersTimeoutMs: '1e4', bodyTimeoutMs: ' 100', maxInFlight: '0x2' },
      sync: { lookbackSeconds: '0x5', pageSize: '1e2' },
      webhooks: { maxBodyBytes: '0x400', maxBacklog: '1e5' },
    }
    const keys = issuesOf(() => loadConfig({ env: {}, overrides: nested })).map((i) => i.key)
    expect(keys.sort()).toEqual([
      'http.bodyTimeoutMs',
      'http.connectTimeoutMs',
      'http.headersTimeoutMs',
      'http.maxInFlight',
      'sync.lookbackSeconds',
      'sync.pageSize',
      'webhooks.maxBacklog',
      'webhooks.maxBodyBytes',
    ])
    const c = loadConfig({
      env: { FSM_RATE_LIMIT: '16', FSM_HTTP_PORT: '8080' },
      overrides: { http: { maxInFlight: 2 }, sync: { pageSize: '50' } },
    })
    expect([c.rateLimit, c.httpPort, c.http.maxInFlight, c.sync.pageSize]).toEqual([16, 8080, 2, 50])
  })

  test('range errors still say the range', () => {
    expect(issuesOf(() => loadConfig({ env: { FSM_RATE_LIMIT: '0' } }))[0]).toMatchObject({
      key: 'FSM_RATE_LIMIT',
      message: expect.stringMatching(/>=\s*1/),
    })
  })
})
