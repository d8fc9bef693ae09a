// Path helpers: the route label used in errors and metrics, auth by route family, query strings.

const OBJECT_ID = /^[a-fA-F0-9]{24}$/
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/**
 * The path with record ids (24-hex, UUID) and upsert key values replaced by placeholders, so
 * metrics by route stay a small set: `/api/v1/jobs/65f0...` -> `/api/v1/jobs/{id}`.
 */
export function templatePath(path: string): string {
  const parts = path.split('/')
  return parts
    .map((part, i) => {
      if (OBJECT_ID.test(part) || UUID.test(part)) return '{id}'
      if (i >= 2 && parts[i - 2] === 'by') return '{value}'
      return part
    })
    .join('/')
}

/** v1 routes take `X-Api-Key`; the legacy `/api/...` family reads only `Authorization: Bearer`. */
/**
 * v1 routes take `X-Api-Key`; the legacy routes read only `Authorization: Bearer` (spec,
 * Authentication 7), and so do the key-management routes, which are "authorised like the
 * dashboard: a key on the Authorization header" (spec, API keys).
 */
export function authHeader(path: string, apiKey: string): Record<string, string> {
  const dashboardStyle = path === '/api/v1/api-keys' || path.startsWith('/api/v1/api-keys/')
  return isV1(path) && !dashboardStyle ? { 'x-api-key': apiKey } : { authorization: `Bearer ${apiKey}` }
}

export function isV1(path: string): boolean {
  return path === '/api/v1' || path.startsWith('/api/v1/')
}

export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[]
export type Query = Readonly<Record<string, QueryValue>>

export function queryString(query: Query | undefined): string {
  if (query === undefined) return ''
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue
    if (Array.isArray(value)) for (const v of value as readonly (string | number)[]) params.append(key, String(v))
    else params.append(key, String(value))
  }
  const text = params.toString()
  return text === '' ? '' : `?${text}`
}
