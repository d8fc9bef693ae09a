// Shared list parameters of clients, jobs, visits and invoices (spec: Shared list parameters):
// page (1-based), limit (default 30, above 100 clamped to 100), sort `field:direction` from the
// resource's sortable list (else 400; default createdAt desc), inclusive `since` on updatedAt
// (not a date: 400; zone-less: UTC unless `timezone`).
import { Collection, type StoredRecord } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { queryInstant } from '../core/iso-time.js'
import { listJson } from './respond.js'
import type { ApiResponse } from './router.js'
import type { Prng } from '../core/prng.js'

export interface ListQuery {
  page: number
  limit: number
  field: string
  dir: 'asc' | 'desc'
  sinceMs: number | null
  timezone: string | undefined
  /** Shuffle the rows sharing a sort value (the `shuffleTies` fault). */
  tieShuffle?: Prng | null
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
    if (rest.length > 0 || (d !== undefined && d !== 'asc' && d !== 'desc'))
      throw badRequest(`Invalid sort direction in '${sort}': use asc or desc`)
    field = f
    dir = d === 'asc' ? 'asc' : 'desc'
  }
  const tz = q.get('timezone')
  const timezone = tz === null || tz === '' ? undefined : tz
  const since = q.get('since')
  const sinceMs = since === null || since === '' ? null : queryInstant('since', since, timezone)
  return { page, limit, field, dir, sinceMs, timezone }
}

/**
 * Finished bodies of unfiltered pages, per sorted-rows array. `Collection.sorted` hands out the same
 * array until the next insert or write, so a page built from it stays right until then; a write
 * makes a new array and the pages of the old one go with it (a WeakMap, no invalidation code).
 * Sync walks and the bench ask for the same pages again and again: a hit skips the filter, the
 * slice and the concatenation of a ~100 KB body (the largest cost of a list answer in a profile).
 * Filtered lists (search, status, clientId...) are built each time.
 */
const pageCache = new WeakMap<readonly StoredRecord[], Map<string, Buffer>>()
const PAGES_PER_ORDER = 64

/**
 * Applies sort, `since` and a resource filter, then pages; the body's rows are cached JSON texts,
 * unless `row` serialises them (rows computed at answer time, e.g. client job aggregates: never
 * kept, since they change without a write to this collection).
 */
export function listResponse<I>(
  coll: Collection<I>,
  lq: ListQuery,
  filter: ((r: StoredRecord<I>) => boolean) | null,
  row?: (r: StoredRecord<I>) => Buffer,
): ApiResponse {
  const ordered = coll.sorted(lq.field, lq.dir)
  const sorted = lq.tieShuffle == null ? ordered : shuffleTies(ordered, lq.field, lq.tieShuffle)
  if (filter !== null || row !== undefined || sorted !== ordered) return { body: buildPage(sorted, lq, filter, row) }
  let pages = pageCache.get(sorted)
  if (pages === undefined) {
    pages = new Map()
    pageCache.set(sorted, pages)
  }
  const key = `${lq.sinceMs ?? ''}|${lq.page}|${lq.limit}`
  let body = pages.get(key)
  if (body === undefined) {
    body = buildPage(sorted, lq, null)
    // Bounded: a since-driven sync asks for a new key on every walk; drop the oldest.
    if (pages.size >= PAGES_PER_ORDER) pages.delete(pages.keys().next().value as string)
    pages.set(key, body)
  }
  return { body }
}

function buildPage<I>(
  sorted: StoredRecord<I>[],
  lq: ListQuery,
  filter: ((r: StoredRecord<I>) => boolean) | null,
  row: (r: StoredRecord<I>) => Buffer = (r) => Collection.bytes(r),
): Buffer {
  const since = lq.sinceMs
  const rows =
    since === null && filter === null
      ? sorted
      : sorted.filter((r) => (since === null || r.updatedMs >= since) && (filter === null || filter(r)))
  const start = (lq.page - 1) * lq.limit
  const page = rows.slice(start, start + lq.limit).map(row)
  return listJson(page, { page: lq.page, limit: lq.limit, total: rows.length })
}

/** A copy of sorted rows with each run sharing one sort value in a random order (Fisher-Yates). */
function shuffleTies<I>(rows: readonly StoredRecord<I>[], field: string, prng: Prng): StoredRecord<I>[] {
  const value = (r: StoredRecord<I>): unknown => (field === 'updatedAt' ? r.updatedMs : field === 'createdAt' ? r.createdMs : r.doc[field])
  const out = [...rows]
  for (let start = 0; start < out.length;) {
    let end = start + 1
    while (end < out.length && value(out[end]!) === value(out[start]!)) end++
    for (let i = end - 1; i > start; i--) {
      const j = start + Math.floor(prng.next() * (i - start + 1))
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    start = end
  }
  return out
}

/** Case-insensitive whole-value match of a string field (spec: jobs `status`, invoices `status`). */
export const sameIgnoringCase = (a: unknown, b: string): boolean => typeof a === 'string' && a.toLowerCase() === b.toLowerCase()
