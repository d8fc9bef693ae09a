// The custom-object list walk: `meta.next.cursor` until it is null (spec, Custom objects). The list
// is id-ordered and not a snapshot, so a record updated behind the walk is missed by it; the next
// `updated_since` bookmark is therefore the time the walk began (the upstream `Date` header of the
// first answer) minus a margin, not the largest updatedAt seen.
import { systemClock, type Clock } from '../model/clock.js'
import { MalformedResponseError } from './errors.js'
import { extractRows } from './page-rows.js'
import type { Priority } from './governor/index.js'
import { CursorMetaSchema, type CursorMeta, type Row } from './response-schemas.js'
import type { Query } from './routes.js'
import type { PageSource } from './keyset/index.js'
import { isoNow, parseInstant } from '../model/timestamps.js'

export interface CustomObjectOptions {
  /** Inclusive lower bound on updatedAt (sent as `updated_since`, UTC ISO). */
  updatedSince?: string | undefined
  /** Default 100 (the API clamps to 1-100). */
  limit?: number
  /** Exact-match filters on `stage` or `data.<key>`. */
  filters?: Query
  priority?: Priority
  signal?: AbortSignal
  /** Subtracted from the walk's start for the next bookmark. Default 30 s. */
  marginMs?: number
  /** Fallback time source when the upstream sends no `Date` header. */
  clock?: Clock
  /** Resume an interrupted walk at this page cursor (`meta.next.cursor` of the last page stored). */
  startCursor?: string
}

export interface CustomObjectPage {
  rows: Row[]
  meta: CursorMeta
  /** Cursor for the next page; null on the last page. */
  next: string | null
  /** When the walk began, by the upstream clock when it sent `Date` (UTC ISO). */
  walkStartedAt: string
  /** `updated_since` for the next walk: walkStartedAt minus the margin. Store it after the last page. */
  bookmark: string
}

export async function* customObjectCursor(
  client: Pick<PageSource, 'get'>,
  slug: string,
  options: CustomObjectOptions = {},
): AsyncGenerator<CustomObjectPage> {
  const route = `/api/v1/objects/${encodeURIComponent(slug)}`
  const localStart = (options.clock ?? systemClock).now()
  const base: Query = {
    ...options.filters,
    limit: options.limit ?? 100,
    ...(options.updatedSince === undefined ? {} : { updated_since: isoNow(parseInstant(options.updatedSince)) }),
  }
  let cursor: string | undefined = options.startCursor
  let startedAt: number | undefined
  for (;;) {
    const query = cursor === undefined ? base : { ...base, cursor }
    const res = await client.get(route, query, { priority: options.priority ?? 'sweep', signal: options.signal })
    if (startedAt === undefined) {
      const serverDate = res.date === undefined ? Number.NaN : parseInstant(res.date)
      startedAt = Number.isNaN(serverDate) ? localStart : serverDate
    }
    const rows = extractRows(res, route)
    const parsed = CursorMetaSchema.safeParse(res.meta ?? {})
    if (!parsed.success) {
      throw new MalformedResponseError(
        { route: res.route, target: `GET ${route}`, status: res.status, detail: 'meta.next is not {cursor, limit} or null' },
        { cause: parsed.error },
      )
    }
    const next = parsed.data.next?.cursor ?? null
    if (next !== null && next === cursor) {
      throw new MalformedResponseError(
        { route: res.route, target: `GET ${route}`, status: res.status, detail: 'meta.next.cursor did not move' },
        { cause: next },
      )
    }
    const bookmark = new Date(startedAt - (options.marginMs ?? 30_000)).toISOString()
    yield { rows, meta: parsed.data, next, walkStartedAt: new Date(startedAt).toISOString(), bookmark }
    if (next === null) return
    cursor = next
  }
}
