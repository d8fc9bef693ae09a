// The incremental sweep of clients, jobs, visits and invoices: `sort=updatedAt:asc&since=<at>`,
// walked by the pure `KeysetWalk` (keyset-walk.ts); this shell only sends its requests and reads
// the answers. How the walk stays exact (ties, the anchor, the count, late rows) is in README.md in
// this folder.
import type { ApiResponse, CallOptions } from '../api-client.js'
import { systemClock, type Clock } from '../../model/clock.js'
import { parseInstant } from '../../model/timestamps.js'
import { ListMetaSchema } from '../response-schemas.js'
import { readKeysetRows } from '../page-rows.js'
import type { Priority } from '../governor/index.js'
import type { Query } from '../routes.js'
import type { KeysetCursor } from './keyset-cursor.js'
import { KeysetWalk, type WalkPage } from './keyset-walk.js'

export type KeysetPage = WalkPage

export interface KeysetOptions {
  /** Resume point from a previous page. */
  cursor?: KeysetCursor | undefined
  /** Start at this instant when there is no cursor (inclusive). */
  since?: string | undefined
  /** Page size, clamped to the API's 1-100. Default 100. */
  limit?: number
  /** The upstream commit lag the walk allows for (README.md in this folder, "Late rows"). Default 0. */
  lookbackMs?: number
  priority?: Priority
  extraQuery?: Query
  signal?: AbortSignal
  /** Time of a request when the upstream sends no `Date` header. */
  clock?: Pick<Clock, 'now'>
  /** Told once per page source when an answer has no `Date` header (the look-back then leans on the local clock). */
  onWarning?: (message: string) => void
}

export interface PageSource {
  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse>
}

export async function* updatedAtKeyset(client: PageSource, route: string, options: KeysetOptions = {}): AsyncGenerator<KeysetPage> {
  const clock = options.clock ?? systemClock
  const walk = new KeysetWalk(options)
  for (;;) {
    const request = walk.next()
    const query: Query = {
      ...options.extraQuery,
      sort: 'updatedAt:asc',
      limit: request.limit,
      page: request.page,
      ...(request.since === undefined ? {} : { since: request.since }),
    }
    const askedAt = clock.now()
    const res = await client.get(route, query, { priority: options.priority ?? 'sweep', signal: options.signal })
    const { page, done, noDate } = walk.absorb({
      rows: readKeysetRows(res, route),
      meta: ListMetaSchema.safeParse(res.meta ?? {}).data ?? {},
      date: res.date === undefined ? Number.NaN : parseInstant(res.date),
      askedAt,
      route: res.route,
      target: `GET ${route}`,
      status: res.status,
    })
    if (noDate && !warnedNoDate.has(client)) {
      warnedNoDate.add(client)
      options.onWarning?.(
        `GET ${route} answered without a Date header: the look-back is reckoned back from the newest updatedAt read, not from the local clock, so the rows within it are read again on every sweep`,
      )
    }
    yield page
    if (done) return
  }
}

/** Page sources already warned about a missing Date header (one warning each). */
const warnedNoDate = new WeakSet<PageSource>()
