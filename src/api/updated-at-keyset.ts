// The incremental sweep of clients, jobs, visits and invoices (design.md, Incremental sweeps):
// `sort=updatedAt:asc&since=<cursor>&page=1`, the cursor moving to each page's last `updatedAt`.
// `since` is inclusive, so rows at the cursor come again and are dropped by id. A tie larger than a
// page is stepped through with page=2,3,... at the same `since`; because stepping pages can skip a
// row when an earlier row of the tie is updated meanwhile (the rest shift left), the tie is then
// read again from page 1 until a pass finds nothing new, and the walk goes on from just after the
// tie's timestamp. Updated rows move to the end and are met again later, with their latest version.
import type { ApiResponse, CallOptions } from './api-client.js'
import { MalformedResponseError } from './errors.js'
import { ListMetaSchema, type KeysetRow, type ListMeta } from './response-schemas.js'
import { readKeysetRows } from './page-rows.js'
import type { Priority } from './request-governor.js'
import type { Query } from './routes.js'
import { parseInstant } from '../store/timestamps.js'

/** What to persist with a page's rows, in the same transaction, to resume after it. */
export interface KeysetCursor {
  /** UTC ISO instant (with `Z`) of the last `updatedAt` committed. */
  since: string
  /** Ids already delivered whose `updatedAt` equals `since`. */
  seenIdsAtCursor: string[]
}

export interface KeysetPage {
  /** Rows not delivered before in this walk (possibly none: commit the cursor anyway). */
  rows: KeysetRow[]
  meta: ListMeta
  cursor: KeysetCursor | undefined
  /** The request that produced the page. */
  request: { since: string | undefined; page: number }
}

export interface KeysetOptions {
  /** Resume point from a previous page. */
  cursor?: KeysetCursor | undefined
  /** Start at this instant when there is no cursor (inclusive). */
  since?: string | undefined
  /** Page size, clamped to the API's 1-100. Default 100. */
  limit?: number
  /** Subtracted from the starting cursor against upstream commit lag; re-delivers that span. */
  lookbackMs?: number
  priority?: Priority
  extraQuery?: Query
  signal?: AbortSignal
}

export interface PageSource {
  get(path: string, query: Query | undefined, options: CallOptions): Promise<ApiResponse>
}

interface Position {
  since: number | undefined
  seen: Set<string>
}

export async function* updatedAtKeyset(client: PageSource, route: string, options: KeysetOptions = {}): AsyncGenerator<KeysetPage> {
  const limit = Math.min(100, Math.max(1, Math.floor(options.limit ?? 100)))
  let pos = startPosition(options)
  let mode: 'scan' | 'tie' | 'verify' = 'scan'
  let page = 1
  let foundInPass = false
  // Rows past a tie delivered while paging it (`id@ms`): not delivered twice in this walk.
  const beyond = new Set<string>()
  for (;;) {
    const sinceIso = pos.since === undefined ? undefined : new Date(pos.since).toISOString()
    const requested = page
    const query: Query = { ...options.extraQuery, sort: 'updatedAt:asc', limit, page, ...(sinceIso === undefined ? {} : { since: sinceIso }) }
    const res = await client.get(route, query, { priority: options.priority ?? 'sweep', signal: options.signal })
    const rows = readKeysetRows(res, route)
    const meta = ListMetaSchema.safeParse(res.meta ?? {}).data ?? {}
    const pageSize = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, limit) : limit
    const short = rows.length < pageSize
    const first = rows[0]
    if (pos.since !== undefined && first !== undefined && instant(first) < pos.since) {
      throw new MalformedResponseError(
        { route: res.route, target: `GET ${route}`, status: res.status, detail: `a row older than since=${sinceIso ?? ''} came back: the route does not honour since` },
        { cause: first },
      )
    }
    const at = pos.since
    const lastAt = rows.length === 0 ? undefined : instant(rows[rows.length - 1]!)
    let fresh: KeysetRow[]
    let done = false
    if (mode === 'scan') {
      fresh = rows.filter((r) => !(instant(r) === at && pos.seen.has(r.id)) && !beyond.has(key(r)))
      pos = advance(pos, rows)
      if (short) done = true
      else if (lastAt === at) [mode, page] = ['tie', 2]
    } else {
      // Stepping through (or re-reading) the tie at `at`: new rows of the tie, and rows past it
      // not yet delivered in this episode.
      fresh = rows.filter((r) => (instant(r) === at ? !pos.seen.has(r.id) : !beyond.has(key(r))))
      for (const r of fresh) {
        if (instant(r) === at) {
          pos.seen.add(r.id)
          foundInPass = true
        } else beyond.add(key(r))
      }
      if (!short && lastAt === at) page++
      else if (mode === 'tie' || foundInPass) [mode, page, foundInPass] = ['verify', 1, false]
      else {
        // A pass found nothing new: every row at `at` is delivered, so scan on from just after it
        // (not from this page's end: rows updated meanwhile may sit on pages the pass skipped).
        pos = { since: (at ?? 0) + 1, seen: new Set() }
        ;[mode, page] = ['scan', 1]
      }
    }
    yield { rows: fresh, meta, cursor: toCursor(pos), request: { since: sinceIso, page: requested } }
    if (done) return
  }
}

function startPosition(options: KeysetOptions): Position {
  const from = options.cursor?.since ?? options.since
  if (from === undefined) return { since: undefined, seen: new Set() }
  const ms = parseInstant(from)
  if (Number.isNaN(ms)) throw new RangeError(`cursor since is not a date: ${from}`)
  const lookback = Math.max(0, options.lookbackMs ?? 0)
  if (lookback > 0) return { since: ms - lookback, seen: new Set() }
  return { since: ms, seen: new Set(options.cursor?.seenIdsAtCursor ?? []) }
}

// The position after delivering `rows` (ascending by updatedAt) from `pos`.
function advance(pos: Position, rows: readonly KeysetRow[]): Position {
  const last = rows.at(-1)
  if (last === undefined) return pos
  const lastAt = instant(last)
  const seen = lastAt === pos.since ? pos.seen : new Set<string>()
  for (const r of rows) if (instant(r) === lastAt) seen.add(r.id)
  return { since: lastAt, seen }
}

function key(row: KeysetRow): string {
  return `${row.id}@${instant(row)}`
}

function toCursor(pos: Position): KeysetCursor | undefined {
  if (pos.since === undefined) return undefined
  return { since: new Date(pos.since).toISOString(), seenIdsAtCursor: [...pos.seen] }
}

function instant(row: KeysetRow): number {
  return parseInstant(row.updatedAt)
}
