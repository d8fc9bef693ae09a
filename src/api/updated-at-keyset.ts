// The incremental sweep of clients, jobs, visits and invoices (README.md, How the sync stays
// exact): `sort=updatedAt:asc&since=<cursor>&page=1`, the cursor moving to each page's last
// `updatedAt`. `since` is inclusive, so rows at the cursor come again and are dropped by id. A tie
// larger than a page is stepped through with page=2,3,... at the same `since`; because stepping
// pages can skip a row when an earlier row of the tie is updated meanwhile (the rest shift left),
// the tie is then read again from page 1 until a pass finds nothing new, and the walk goes on from
// just after the tie's timestamp. Updated rows move to the end and are met again later, with their
// latest version. A route that ignores `page` answers a stepped tie page with rows the pass already
// received: the rest of the tie is out of reach, so the stepping ends and the walk fails (moving
// past the tie would skip its unread rows). Any other walk that stops moving fails after a bounded
// number of requests (stallLimit) instead of spending the budget forever.
import { z } from 'zod'
import type { ApiResponse, CallOptions } from './api-client.js'
import { MalformedResponseError, PagingStalledError } from './errors.js'
import { ListMetaSchema, type KeysetRow, type ListMeta } from './response-schemas.js'
import { readKeysetRows } from './page-rows.js'
import type { Priority } from './governor/index.js'
import type { Query } from './routes.js'
import { parseInstant } from '../model/timestamps.js'

/** What to persist with a page's rows, in the same transaction, to resume after it; read back through this schema. */
export const KeysetCursorSchema = z.object({
  /** UTC ISO instant (with `Z`) of the last `updatedAt` committed. */
  since: z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time'),
  /** Ids already delivered whose `updatedAt` equals `since`. */
  seenIdsAtCursor: z.array(z.string()),
})
export type KeysetCursor = z.infer<typeof KeysetCursorSchema>

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
  // Ids of the tie received in the current pass (tie or verify), delivered or not.
  let passIds = new Set<string>()
  // Requests since the cursor last moved or a row was last delivered.
  let idle = 0
  for (;;) {
    const sinceIso = pos.since === undefined ? undefined : new Date(pos.since).toISOString()
    const requested = page
    const query: Query = {
      ...options.extraQuery,
      sort: 'updatedAt:asc',
      limit,
      page,
      ...(sinceIso === undefined ? {} : { since: sinceIso }),
    }
    const res = await client.get(route, query, { priority: options.priority ?? 'sweep', signal: options.signal })
    const rows = readKeysetRows(res, route)
    const meta = ListMetaSchema.safeParse(res.meta ?? {}).data ?? {}
    const pageSize = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, limit) : limit
    const short = rows.length < pageSize
    const first = rows[0]
    if (pos.since !== undefined && first !== undefined && instant(first) < pos.since) {
      throw new MalformedResponseError(
        {
          route: res.route,
          target: `GET ${route}`,
          status: res.status,
          detail: `a row older than since=${sinceIso ?? ''} came back: the route does not honour since`,
        },
        { cause: first },
      )
    }
    const stalled = (requests: number, detail: string) =>
      new PagingStalledError(
        { route: res.route, target: `GET ${route}`, requests, detail },
        { cause: { since: sinceIso, page: requested } },
      )
    const at = pos.since
    const before = { since: pos.since, seen: pos.seen.size }
    const lastAt = rows.length === 0 ? undefined : instant(rows[rows.length - 1]!)
    let fresh: KeysetRow[]
    let done = false
    if (mode === 'scan') {
      fresh = rows.filter((r) => !(instant(r) === at && pos.seen.has(r.id)) && !beyond.has(key(r)))
      pos = advance(pos, rows)
      if (short) done = true
      else if (lastAt === at) {
        ;[mode, page] = ['tie', 2]
        passIds = new Set(rows.map((r) => r.id))
      }
    } else {
      const tieIds = rows.filter((r) => instant(r) === at).map((r) => r.id)
      if (requested === 1) passIds = new Set()
      else if (!short && lastAt === at && tieIds.every((id) => passIds.has(id))) {
        // A full page of the tie, every row of it already received in this pass: the route
        // answered an earlier page again instead of page=N.
        throw stalled(
          idle + 1,
          `page=${requested} at since=${sinceIso ?? ''} brought only rows of an earlier page of the same ${passIds.size}+ rows sharing that updatedAt: the route ignores page, so the rest of them cannot be read`,
        )
      }
      for (const id of tieIds) passIds.add(id)
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
    const moved = pos.since !== before.since || pos.seen.size !== before.seen || fresh.length > 0
    idle = moved ? 0 : idle + 1
    if (idle >= stallLimit(pos.seen.size, pageSize)) {
      throw stalled(idle, `${idle} requests at since=${sinceIso ?? '(none)'} delivered nothing new and did not move the cursor`)
    }
    yield { rows: fresh, meta, cursor: toCursor(pos), request: { since: sinceIso, page: requested } }
    if (done) return
  }
}

/**
 * Requests a walk may make without moving its cursor or delivering a row before it is declared
 * stalled. A healthy walk can spend two passes over the tie at its cursor delivering nothing: a
 * resumed walk first re-reads the pages of ids its cursor already holds, and the verifying re-read
 * of a tie delivers nothing when nothing changed. Ten more requests are margin. For a tie within
 * one page that is 12 requests: a stuck walk stops within seconds, not after a window's budget.
 */
export function stallLimit(idsAtCursor: number, pageSize: number): number {
  return 10 + 2 * Math.ceil(idsAtCursor / Math.max(1, pageSize))
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
