// A small route table: `:name` segments become params; the first route whose method and path
// match wins, so specific routes are registered before general ones.
import type { IncomingHttpHeaders } from 'node:http'
import type { ApiKeyRecord } from '../auth/key-store.js'
import type { Prng } from '../core/prng.js'

/**
 * v1: X-Api-Key or Bearer, scopes checked. legacy: Bearer only, no scopes (spec: Authentication 7).
 * keys: the key-management routes, authorised like the dashboard (Bearer, no scopes). open: no auth.
 */
export type Family = 'v1' | 'legacy' | 'keys' | 'open'

export interface ApiRequest {
  method: string
  path: string
  params: Record<string, string>
  query: URLSearchParams
  body: unknown
  headers: IncomingHttpHeaders
  /** The authenticated key; null for JWTs (support-issued or login) and open routes. */
  key: ApiKeyRecord | null
  /** The user the caller authenticates as (a key's creator, a login token's user); null on open routes. */
  userId: string | null
  /** The `shuffleTies` fault's random source: list rows sharing a sort value are shuffled. */
  tieShuffle?: Prng | null
}

export interface ApiResponse {
  status?: number
  body: unknown
  headers?: Record<string, string>
}

export type Handler = (req: ApiRequest) => ApiResponse | Promise<ApiResponse>

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  family: Family
  scope?: string
  /** Set on a route that takes multipart/form-data: what the form must hold (named in the 400 for other bodies). */
  form?: string
  handler: Handler
}

export interface RouteMatch {
  route: RouteDef
  params: Record<string, string>
}

export class Router {
  private readonly routes: { def: RouteDef; segments: string[] }[] = []

  add(...defs: RouteDef[]): void {
    for (const def of defs) this.routes.push({ def, segments: def.path.split('/').filter((s) => s !== '') })
  }

  match(method: string, path: string): RouteMatch | null {
    const parts = path.split('/').filter((s) => s !== '')
    for (const { def, segments } of this.routes) {
      if (def.method !== method || segments.length !== parts.length) continue
      const params: Record<string, string> = {}
      let ok = true
      for (let i = 0; i < segments.length && ok; i++) {
        const seg = segments[i]!
        const part = parts[i]!
        if (seg.startsWith(':')) {
          try {
            params[seg.slice(1)] = decodeURIComponent(part)
          } catch {
            params[seg.slice(1)] = part
          }
        } else ok = seg === part
      }
      if (ok) return { route: def, params }
    }
    return null
  }
}
