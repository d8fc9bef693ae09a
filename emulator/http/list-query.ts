// Shared list parameters of clients, jobs, visits and invoices (spec: Shared list parameters):
// page (1-based), limit (default 30, above 100 clamped to 100), sort `field:direction` from the
// resource's sortable list (else 400; default createdAt desc), inclusive `since` on updatedAt
// (not a date: 400; zone-less: UTC unless `timezone`).
import { Collection, type StoredRecord } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { queryInstant } from '../core/iso-time.js'
import { listJson } from './respond.js'
import type { ApiResponse } from './router.js'

export interface ListQuery {
  page: number
  limit: number
  field: string
  dir: 'asc' | 'desc'
  sinceMs: number | null
  timezone: string | undefined
}

function positiveInt(name: string, raw: string | null, fallback: number): number {
  if (raw === null || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1) throw badRequest(`'${name}' must be a positive integer`)
  return n
}

export function parseListQuery(q: URLSearchParams, sortable: readonly string[], maxLimit = 100): ListQuery {
  const page = positiveInt('page', q.get('page'), 1)
  const limit = Math.min(positiveInt('limit', q.get('limit'), 30), maxLimit)
  let field = 'createdAt'
  let dir: 'asc' | 'desc' = 'desc'
  const sort = q.get('sort')
  if (sort !== null && sort !== '') {
    const [f = '', d, ...rest] = sort.split(':')
    if (!sortable.includes(f)) throw badRequest(`Unsupported sort field '${f}'. Sortable fields: ${sortable.join(', ')}`)
    if (rest.length > 0 || (d !== undefined && d !== 'asc' && d !== 'desc')) throw badRequest(`Invalid sort direction in '${sort}': use asc or desc`)
    field = f
    dir = d === 'asc' ? 'asc' : 'desc'
  }
  const tz = q.get('timezone')
  const timezone = tz === null || tz === '' ? undefined : tz
  const since = q.get('since')
  const sinceMs = since === null || since === '' ? null : queryInstant('since', since, timezone)
  return { page, limit, field, dir, sinceMs, timezone }
}

/** Applies sort, `since` and a resource filter, then pages; the body's rows are cached JSON texts. */
export function listResponse<I>(coll: Collection<I>, lq: ListQuery, filter: ((r: StoredRecord<I>) => boolean) | null): ApiResponse {
  const sorted = coll.sorted(lq.field, lq.dir)
  const since = lq.sinceMs
  const rows = since === null && filter === null ? sorted : sorted.filter((r) => (since === null || r.updatedMs >= since) && (filter === null || filter(r)))
  const start = (lq.page - 1) * lq.limit
  const page = rows.slice(start, start + lq.limit).map((r) => Collection.bytes(r))
  return { body: listJson(page, { page: lq.page, limit: lq.limit, total: rows.length }) }
}

/** Case-insensitive whole-value match of a string field (spec: jobs `status`, invoices `status`). */
export const sameIgnoringCase = (a: unknown, b: string): boolean => typeof a === 'string' && a.toLowerCase() === b.toLowerCase()
