// Who is calling (spec: Authentication). v1 routes: `X-Api-Key` is evaluated first, then
// `Authorization: Bearer`; only `svc_live_` keys; a JWT gives 401. Legacy and key-management routes
// read only `Authorization: Bearer` (and accept support-issued JWTs).
import type { IncomingHttpHeaders } from 'node:http'
import { unauthorized } from '../core/http-error.js'
import type { Family } from '../http/router.js'
import { KEY_PREFIX, type ApiKeyRecord, type KeyStore } from './key-store.js'

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/

function bearer(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization
  if (h === undefined) return undefined
  const m = /^Bearer\s+(.*)$/i.exec(h.trim())
  return m === null ? '' : (m[1] ?? '').trim()
}

export interface Caller {
  /** The key behind the request; null for a JWT. */
  key: ApiKeyRecord | null
  /** A login JWT's user; null for keys and support-issued JWTs. */
  userId: string | null
}

/** Who is behind a request; throws 401 when nobody acceptable is. */
export function authenticate(headers: IncomingHttpHeaders, family: Family, keys: KeyStore, nowMs: number): Caller {
  let token: string | undefined
  if (family === 'v1') {
    const x = headers['x-api-key']
    token = typeof x === 'string' ? x.trim() : bearer(headers)
  } else token = bearer(headers)
  if (token === undefined) {
    throw unauthorized(
      family === 'v1' ? 'Missing API key: send X-Api-Key or Authorization: Bearer' : 'Missing Authorization: Bearer header',
    )
  }
  if (token === '') throw unauthorized('Malformed credentials')
  if (!token.startsWith(KEY_PREFIX)) {
    if (JWT.test(token)) {
      // Support-issued and login JWTs (spec: Authentication 4 and 7; earlier schema revision).
      const holder = family === 'v1' ? undefined : keys.tokenHolder(token)
      if (holder !== undefined) return { key: null, userId: holder.userId }
      throw unauthorized(family === 'v1' ? 'v1 routes accept API keys only, not login tokens' : 'Invalid or expired token')
    }
    throw unauthorized('Malformed API key')
  }
  const key = keys.find(token)
  if (key === undefined) throw unauthorized('Invalid API key')
  if (key.revoked) throw unauthorized('API key has been revoked')
  if (!key.isActive) throw unauthorized('API key is inactive')
  if (key.expiresMs !== null && key.expiresMs <= nowMs) throw unauthorized('API key has expired')
  return { key, userId: null }
}

export const hasScope = (key: ApiKeyRecord, scope: string): boolean => key.scopes.includes('*') || key.scopes.includes(scope)
