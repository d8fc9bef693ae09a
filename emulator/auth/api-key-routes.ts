// API-key management (spec: Endpoints, API keys). Authorised like the dashboard: a key on the
// `Authorization` header, per-key scopes not enforced. The plaintext is returned once; DELETE
// revokes permanently. `expiresAt` is creation-only. `rateLimit` is requests per minute (the spec
// leaves its unit open; this is the unit of the default limit).
import type { Doc } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import { parseInstant } from '../core/iso-time.js'
import { asObject, optBoolean, rejectUnknown } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import { SCOPES } from '../data/account-config.js'
import type { RouteDef } from '../http/router.js'
import { keyView, type ApiKeyRecord } from './key-store.js'

function scopes(v: unknown): string[] {
  if (v === undefined) return []
  if (!Array.isArray(v)) throw badRequest("'scopes' must be an array of scope names")
  const bad = v.filter((s) => typeof s !== 'string' || !(SCOPES as readonly string[]).includes(s))
  if (bad.length > 0) throw badRequest(`Unknown scope(s): ${bad.map(String).join(', ')}`)
  return [...new Set(v as string[])]
}

export function rateLimitValue(v: unknown): number | null {
  if (v === undefined || v === null) return null
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw badRequest("'rateLimit' must be a positive integer (requests per minute)")
  return v
}

export function expiryValue(v: unknown): number | null {
  if (v === undefined || v === null) return null
  const ms = typeof v === 'string' ? parseInstant(v) : null
  if (ms === null) throw badRequest("'expiresAt' must be an ISO-8601 date-time")
  return ms
}

export function apiKeyRoutes(ctx: EmulatorContext): RouteDef[] {
  const find = (id: string | undefined): ApiKeyRecord => {
    const k = ctx.keys.get(id ?? '')
    if (k === undefined || k.revoked) throw notFound('API key not found')
    return k
  }
  return [
    {
      method: 'GET',
      path: '/api/v1/api-keys',
      family: 'keys',
      handler: () => {
        const data = ctx.keys
          .all()
          .filter((k) => k.isActive && !k.revoked)
          .map(keyView)
        return { body: { success: true, data, meta: { total: data.length } } }
      },
    },
    {
      method: 'POST',
      path: '/api/v1/api-keys',
      family: 'keys',
      handler: (req) => {
        const b = asObject(req.body)
        rejectUnknown(b, ['name', 'scopes', 'expiresAt', 'rateLimit'])
        if (typeof b.name !== 'string' || b.name.trim() === '') throw badRequest("'name' is required")
        const { record, key } = ctx.keys.create(
          { name: b.name, scopes: scopes(b.scopes), expiresMs: expiryValue(b.expiresAt), rateLimit: rateLimitValue(b.rateLimit) },
          ctx.clock.now(),
          ctx.state.ownerUserId,
        )
        return { status: 201, body: { success: true, data: { ...keyView(record), key } } }
      },
    },
    {
      method: 'GET',
      path: '/api/v1/api-keys/:id',
      family: 'keys',
      handler: (req) => ({ body: { success: true, data: keyView(find(req.params.id)) } }),
    },
    {
      method: 'PUT',
      path: '/api/v1/api-keys/:id',
      family: 'keys',
      handler: (req) => {
        const k = find(req.params.id)
        const b: Doc = asObject(req.body)
        if (b.expiresAt !== undefined) throw badRequest("'expiresAt' cannot be changed: it is set at creation only")
        rejectUnknown(b, ['name', 'scopes', 'rateLimit', 'isActive'])
        if (b.name !== undefined) {
          if (typeof b.name !== 'string' || b.name.trim() === '') throw badRequest("'name' must be a non-empty string")
          k.name = b.name
        }
        if (b.scopes !== undefined) k.scopes = scopes(b.scopes)
        if (b.rateLimit !== undefined) k.rateLimit = rateLimitValue(b.rateLimit)
        const active = optBoolean(b, 'isActive')
        if (active !== undefined) k.isActive = active
        return { body: { success: true, data: keyView(k) } }
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/api-keys/:id',
      family: 'keys',
      handler: (req) => {
        const k = find(req.params.id)
        k.revoked = true
        return { body: { success: true, data: { id: k.id, revoked: true } } }
      },
    },
  ]
}
