import { describe, expect, test } from 'vitest'
import { apiKeys, metadataRow, webhookEndpoints, withoutSecrets } from '../../../connectors/account-metadata.js'

describe('account metadata never stores a secret', () => {
  test('a webhook endpoint with its secret: the secret is dropped everywhere', () => {
    const row = metadataRow(webhookEndpoints, {
      id: 'w1',
      url: 'https://x.example/hook',
      events: ['client.created'],
      secret: 'whsec_abcdef',
      metadata: { note: 'n', signingSecret: 's' },
    })!
    expect(row.raw).not.toContain('whsec_abcdef')
    expect(JSON.parse(row.raw)).toEqual({ id: 'w1', url: 'https://x.example/hook', events: ['client.created'], metadata: { note: 'n' } })
    expect(Object.values(row.columns).join(' ')).not.toContain('whsec_abcdef')
  })

  test('an API key record with a plaintext key: only name, scopes, expiry and last use remain', () => {
    const row = metadataRow(apiKeys, {
      id: 'k1',
      name: 'warehouse',
      scopes: ['jobs:read'],
      key: 'svc_live_secret',
      expiresAt: '2027-01-01T00:00:00Z',
      lastUsedAt: null,
    })!
    expect(row.raw).not.toContain('svc_live_secret')
    expect(row.columns).toMatchObject({
      name: 'warehouse',
      scopes: '["jobs:read"]',
      expires_at: '2027-01-01T00:00:00.000Z',
      last_used_at: null,
    })
  })

  test('nested objects are cleaned too; arrays are kept as they are', () => {
    expect(withoutSecrets({ a: { token: 't', b: 1 }, list: [1, 2] })).toEqual({ a: { b: 1 }, list: [1, 2] })
  })
})
