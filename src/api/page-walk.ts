// A plain page walk, page=1..N until `page * limit >= meta.total` (spec, Conventions 6). Under
// concurrent writes it can skip rows (a record moved to an earlier page while the walk runs): use
// it for reconciliation of ids (which confirms each candidate with a GET) and for small reference
// lists, not for incremental sweeps.
import type { CallOptions } from './api-client.js'
import { extractRows } from './page-rows.js'
import type { Priority } from './governor/index.js'
import { ListMetaSchema, type ListMeta, type Row } from './response-schemas.js'
import type { Query } from './routes.js'
import type { PageSource } from './keyset/index.js'

export interface PageWalkOptions {
  /** Page size; the API clamps above 100. Default 100. */
  limit?: number
  query?: Query
  priority?: Priority
  signal?: AbortSignal
  /** Safety stop for a server whose `total` never comes. Default 100,000 pages. */
  maxPages?: number
}

export interface WalkPage {
  rows: Row[]
  meta: ListMeta
  page: number
}

export async function* pageWalk(client: Pick<PageSource, 'get'>, route: string, options: PageWalkOptions = {}): AsyncGenerator<WalkPage> {
  const limit = Math.max(1, Math.floor(options.limit ?? 100))
  const callOptions: CallOptions = { priority: options.priority ?? 'reconcile', signal: options.signal }
  for (let page = 1; page <= (options.maxPages ?? 100_000); page++) {
    const res = await client.get(route, { ...options.query, page, limit }, callOptions)
    const rows = extractRows(res, route)
    const meta = ListMetaSchema.safeParse(res.meta ?? {}).data ?? {}
    yield { rows, meta, page }
    const size = meta.limit !== undefined && meta.limit > 0 ? meta.limit : limit
    if (rows.length === 0) return
    if (meta.total !== undefined ? page * size >= meta.total : rows.length < size) return
  }
}
