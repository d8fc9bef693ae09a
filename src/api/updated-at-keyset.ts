// The incremental sweep of clients, jobs, visits and invoices (README.md, How the sync stays
// exact): `sort=updatedAt:asc&since=<at>`, `at` moving to each page's last `updatedAt`. `since` is
// inclusive, so the rows at `at` come again and are dropped by id.
//
// Ties. Rows sharing one `updatedAt` (a bulk import stamps hundreds with one millisecond) cannot be
// got past with `since` alone: a tie larger than what is left of a page is stepped through with
// `page`/`limit` at the same `since`, each step overlapping the rows already read by at least one
// (the offset is (page - 1) * limit, so the overlap is bought by choosing `limit`). Stepping by
// offset skips a row when a row before the offset leaves the list meanwhile (updated: it moves to
// the end; deleted: it is hidden) and the rest shift left, and also when the upstream orders the
// rows of a tie differently from one request to the next (the spec promises no order among them).
//
// The anchor. The last row read before a step (`anchor`, by id and updatedAt) must sit in the new
// answer at the very position it had. If the tie's order is stable between requests, that proves
// that no row left or joined before it on balance, so the rows after it are exactly those that
// follow it now and none was skipped. If it is not where it was, the tie is read again from page 1
// (a tie that did not move costs nothing more than its pages). Nothing here relies on the anchor
// alone, though: the order may be unstable.
//
// The count. After `MAX_RESTARTS` re-reads of one tie whose answers all gave the same `meta.total`
// (no row joined or left the list meanwhile, so the moves are the order's, not the data's), the walk
// stops trusting the order and steps on; `stepFrom` is the lowest `since` where it did. From then on
// it keeps the ids of every row it receives at or after `stepFrom` (`received`). Every row of the
// list at or after `stepFrom` has been received once an answer at `since=stepFrom` reports a
// `meta.total` no greater than the number of those ids: a row updated meanwhile stays in that list
// (its updatedAt only grows) and counts once by id, a row inserted meanwhile is in the total and is
// counted only if it was received. If the walk reaches the end short of that (or somewhere past
// `stepFrom`, where it has no total for `stepFrom`), it reads again from `stepFrom`, delivering only
// what it has not received, until such an answer shows the count reached (a second pass often ends
// on its first page). Until then the cursors it yields keep `rereadFrom` at `stepFrom`, so a walk cut
// short re-reads from there. What this proves, without any order assumed: the rows at or after
// `stepFrom` not received are no more than the received rows deleted during the walk (each deleted
// received id is counted but is no longer in the total). What is assumed: that no received row is
// deleted while a tie is stepped on this path, or, if one is, that the shift it causes does not hide
// an unread row; a delete changes `meta.total`, which sends the walk back to the anchor rule (read
// the tie again), so the residual case is a delete balanced by an insert between two answers of a
// tie whose order is also unstable. A walk that never gives up on the anchor (every tie stable, or
// read again until it is) pays nothing for the count. A route that ignores `page` answers a step
// with rows the pass already received: the walk fails (moving past the tie would skip its unread
// rows), as does any walk that stops moving after a bounded number of requests (stallLimit).
//
// Late rows (upstream commit lag). A row stamped `t` may become visible a little after `t`; the
// cursor's look-back margin (`lookbackMs`) bounds that lag. A request answered at upstream time `O`
// (its `Date` header; without one, the earlier of our clock and the newest updatedAt received, since
// our clock may run ahead) saw every row stamped at or before `O - lookbackMs`, so only the part of
// its span above that can still receive rows: the stored cursor keeps where that part begins
// (`rereadFrom`, 1 ms before `since` when the rows at `since` are in it) and the next walk starts
// there, delivering every row it reads again (a row written twice with one updatedAt comes with its
// new content; newer wins, equal is idempotent). Only a walk that starts at the cursor's `since`
// itself (the rest of a tie read in part) holds back the ids the cursor already delivered. On a
// quiet account, where the newest rows are older than the margin, the next walk starts just after
// them (one request when nothing changed, however large the tie at the cursor); rows changed within
// the margin of a read are read once more by the next walk, which is the only look-back paid.
import { z } from 'zod'
import type { ApiResponse, CallOptions } from './api-client.js'
import { systemClock, type Clock } from '../model/clock.js'
import { MalformedResponseError, PagingStalledError } from './errors.js'
import { ListMetaSchema, type KeysetRow, type ListMeta } from './response-schemas.js'
import { readKeysetRows } from './page-rows.js'
import type { Priority } from './governor/index.js'
import type { Query } from './routes.js'
import { parseInstant } from '../model/timestamps.js'

const instantText = z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time')

/** What to persist with a page's rows, in the same transaction, to resume after it; read back through this schema. */
export const KeysetCursorSchema = z.object({
  /** UTC ISO instant (with `Z`) of the last `updatedAt` committed. */
  since: instantText,
  /** Ids already delivered whose `updatedAt` equals `since`. */
  seenIdsAtCursor: z.array(z.string()),
  /**
   * Where the next walk starts (inclusive): before `since` while rows there may still appear late,
   * `since` + 1 ms once every row at `since` has been read and no late row can come. Absent in
   * cursors stored before it existed: the next walk starts at `since` minus the look-back.
   */
  rereadFrom: instantText.optional(),
})
export type KeysetCursor = z.infer<typeof KeysetCursorSchema>

export interface KeysetPage {
  /** Rows not delivered before in this walk (possibly none: commit the cursor anyway). */
  rows: KeysetRow[]
  meta: ListMeta
  cursor: KeysetCursor | undefined
  /**
   * Rows of the list after this answer's last row, from its `meta.total` (the rows at or after
   * `since`): what the walk has still to read, as the upstream counted it then; 0 once the walk is
   * done; undefined when the answer had no total. An estimate: rows changed meanwhile come on top.
   */
  remaining: number | undefined
  /** The request that produced the page. */
  request: { since: string | undefined; page: number; limit: number }
}

export interface KeysetOptions {
  /** Resume point from a previous page. */
  cursor?: KeysetCursor | undefined
  /** Start at this instant when there is no cursor (inclusive). */
  since?: string | undefined
  /** Page size, clamped to the API's 1-100. Default 100. */
  limit?: number
  /** The upstream commit lag the walk allows for (see the top of this file). Default 0. */
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

/** The next request inside the rows at one `since`: `page`, `limit` and the offset they make. */
export interface Step {
  page: number
  limit: number
  offset: number
}

/**
 * The step that reads the most rows not read yet, when the first `read` rows at a `since` have
 * been read: page 1 (no overlap needed: nothing before it can shift), or a later page whose offset
 * ((page - 1) * limit) falls inside the rows read, so that it overlaps them by at least one row.
 * Pure.
 */
export function nextStep(read: number, maxLimit: number): Step {
  let best: Step = { page: 1, limit: maxLimit, offset: 0 }
  let bestFresh = maxLimit - read
  for (let q = 1; q < read; q++) {
    const limit = Math.min(maxLimit, Math.floor((read - 1) / q))
    if (limit - 1 <= bestFresh) break
    const offset = q * limit
    const fresh = limit - (read - offset)
    if (fresh > bestFresh) [best, bestFresh] = [{ page: q + 1, limit, offset }, fresh]
  }
  return best
}

export async function* updatedAtKeyset(client: PageSource, route: string, options: KeysetOptions = {}): AsyncGenerator<KeysetPage> {
  const maxLimit = Math.min(100, Math.max(1, Math.floor(options.limit ?? 100)))
  const lagMs = Math.max(0, options.lookbackMs ?? 0)
  const clock = options.clock ?? systemClock
  const start = startOf(options, lagMs)
  // Ids delivered at `held.at` before this walk (the stored cursor's). They are not delivered again
  // only when the walk starts at `held.at` itself (the rest of a tie read in part); a walk that
  // starts before it re-reads a look-back span, and rows in it come again: a row written twice
  // with one updatedAt (a second-precision upstream, or a late commit) must reach the mirror.
  const held = start.held !== undefined && start.at === start.held.at ? start.held : undefined
  const kept = start.held
  // The `since` of the next request, and the ids delivered whose updatedAt is `at`.
  let at = start.at
  let seen = seenAt(at, held, [])
  // Whether `at` is the updatedAt of a row read (not just where the walk began).
  let positioned = kept === undefined
  // The first `read` rows of the list at `at` have been read; `anchor` is the last of them.
  let read = 0
  let anchor: KeysetRow | undefined
  // Ids at `at` received since the walk last read page 1 at `at` (delivered or not).
  let passIds = new Set<string>()
  // Rows past the tie at `at` delivered while stepping it (`id@ms`): not delivered twice.
  let beyond = new Set<string>()
  // Times the tie at `at` was read again from page 1 because a step's anchor was out of place, and
  // the `meta.total`s its answers gave (more than one: rows joined or left meanwhile).
  let restarts = 0
  let totals = new Set<number | undefined>()
  // The lowest `since` at which the walk went on although the anchor moved (the tie order is not
  // stable), and the newest updatedAt received of every row at or after it (before that: at or
  // after `at`). See the top of this file.
  let stepFrom: number | undefined
  const received = new Map<string, number>()
  // The furthest the walk had come before it went back to `stepFrom`: its cursor stays.
  let front: { at: number; seen: Set<string>; next: number } | undefined
  // The newest updatedAt received (or held): the reference for the look-back without a Date header.
  let newest = kept?.at ?? Number.NEGATIVE_INFINITY
  // The lowest instant at which a row may still appear late, over the requests made so far.
  let lateFrom = Number.POSITIVE_INFINITY
  // Requests since the cursor last moved or a row was last delivered.
  let idle = 0
  for (;;) {
    const step = nextStep(read, maxLimit)
    const sinceIso = at === undefined ? undefined : new Date(at).toISOString()
    const query: Query = {
      ...options.extraQuery,
      sort: 'updatedAt:asc',
      limit: step.limit,
      page: step.page,
      ...(sinceIso === undefined ? {} : { since: sinceIso }),
    }
    const askedAt = clock.now()
    const res = await client.get(route, query, { priority: options.priority ?? 'sweep', signal: options.signal })
    const rows = readKeysetRows(res, route)
    const meta = ListMetaSchema.safeParse(res.meta ?? {}).data ?? {}
    const pageSize = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, step.limit) : step.limit
    const first = rows[0]
    if (at !== undefined && first !== undefined && instant(first) < at) {
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
        { cause: { since: sinceIso, page: step.page, limit: step.limit } },
      )
    const lastAt = rows.length === 0 ? undefined : instant(rows[rows.length - 1]!)
    const full = rows.length >= pageSize
    // Everything at or after `since` has been read once this answer is in: a short page, or
    // `meta.total` reached (spec, Conventions 6).
    const complete = !full || (meta.total !== undefined && meta.total <= step.offset + rows.length)
    const tieIds = rows.filter((r) => instant(r) === at).map((r) => r.id)
    if (step.page === 1) passIds = new Set()
    else if (full && lastAt === at && tieIds.every((id) => passIds.has(id))) {
      // A full page of the tie, every row of it already received in this pass: the route
      // answered an earlier page again instead of the one asked for.
      throw stalled(
        idle + 1,
        `page=${step.page} at since=${sinceIso ?? ''} brought only rows of an earlier page of the same ${passIds.size}+ rows sharing that updatedAt: the route ignores page, so the rest of them cannot be read`,
      )
    }
    for (const id of tieIds) passIds.add(id)
    // A step past page 1 holds when the anchor is where it was (see the top of this file). When it
    // is not, the tie is read again from page 1, up to `MAX_RESTARTS` times; then the walk goes on
    // and the count decides.
    const anchored = step.offset === 0 || sameRow(rows[read - 1 - step.offset], anchor)
    totals.add(meta.total)
    const restart = !anchored && (restarts < MAX_RESTARTS || meta.total === undefined || totals.size > 1)
    if (!anchored && !restart && at !== undefined) stepFrom = Math.min(stepFrom ?? at, at)
    const delivered = (r: KeysetRow) => {
      const t = instant(r)
      return (
        (t === at && seen.has(r.id)) ||
        (held !== undefined && t === held.at && held.ids.has(r.id)) ||
        beyond.has(key(r)) ||
        received.get(r.id) === t
      )
    }
    const fresh = rows.filter((r) => !delivered(r))
    const before = { at, seen: seen.size }
    for (const r of fresh) {
      if (instant(r) === at) seen.add(r.id)
      else beyond.add(key(r))
    }
    const base = stepFrom ?? at ?? Number.NEGATIVE_INFINITY
    for (const r of rows) {
      const t = instant(r)
      if (t >= base && !((received.get(r.id) ?? Number.NEGATIVE_INFINITY) >= t)) received.set(r.id, t)
      if (t > newest) newest = t
    }
    // Every row at or after `stepFrom` has been received when an answer at that since counts no
    // more rows than the distinct ids received there (see the top of this file).
    const covered = stepFrom !== undefined && at === stepFrom && meta.total !== undefined && received.size >= meta.total
    // The part of this answer's span that was younger than the lag margin when it was read.
    const observed = observedAt(res, askedAt, newest, () => {
      if (warnedNoDate.has(client)) return
      warnedNoDate.add(client)
      options.onWarning?.(
        `GET ${route} answered without a Date header: the look-back is reckoned back from the newest updatedAt read, not from the local clock, so the rows within it are read again on every sweep`,
      )
    })
    if (complete || (lastAt !== undefined && lastAt > observed - lagMs))
      // Rows at `at` itself inside the margin: 1 ms before it, so that the stored cursor's re-read
      // point lies before its `since` and the next walk delivers them again (see `held`).
      lateFrom = Math.min(lateFrom, Math.max(at === undefined ? -Infinity : at - 1, observed - lagMs))
    if (restart) {
      // The tie moved while it was stepped: read it again from page 1.
      restarts++
      read = 0
      anchor = undefined
    } else if (lastAt !== undefined && lastAt !== at) {
      // Past the rows at `at`: the rows at `lastAt` in this answer are the first at that since.
      const atLast = rows.filter((r) => instant(r) === lastAt)
      at = lastAt
      seen = seenAt(at, held, atLast)
      read = atLast.length
      anchor = atLast.at(-1)
      passIds = new Set(atLast.map((r) => r.id))
      beyond = new Set()
      restarts = 0
      totals = new Set()
      if (stepFrom === undefined) for (const [id, t] of received) if (t < at) received.delete(id)
    } else if (rows.length > 0) {
      read = step.offset + rows.length
      anchor = rows.at(-1)
    }
    if (rows.length > 0) positioned = true
    // Read to the end with the anchor in place, or every row from `stepFrom` on received.
    const done = covered || (stepFrom === undefined && complete && !restart)
    const moved = at !== before.at || seen.size !== before.seen || fresh.length > 0
    idle = moved ? 0 : idle + 1
    const widest = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, maxLimit) : maxLimit
    if (!done && idle >= stallLimit(seen.size, widest)) {
      throw stalled(idle, `${idle} requests at since=${sinceIso ?? '(none)'} delivered nothing new and did not move the cursor`)
    }
    // Once every row at `at` has been read (a last answer holding rows at it), the next walk may
    // start just after it, unless a late row may still come. Until the rows from `stepFrom` on are
    // proven received, the next walk starts there.
    if (front !== undefined && at !== undefined && at >= front.at) front = undefined
    const next = front !== undefined ? front.next : at === undefined ? Infinity : complete && !restart && lastAt === at ? at + 1 : at
    const [cursorAt, cursorSeen] = front === undefined ? [at, positioned ? seen : undefined] : [front.at, front.seen]
    const unproven = done || stepFrom === undefined ? Infinity : stepFrom
    const cursor = toCursor(cursorAt, cursorSeen, kept, Math.min(lateFrom, next, unproven))
    const remaining = done ? 0 : meta.total === undefined ? undefined : Math.max(0, meta.total - (step.offset + rows.length))
    yield { rows: fresh, meta, cursor, remaining, request: { since: sinceIso, page: step.page, limit: step.limit } }
    if (done) return
    if (complete && !restart && stepFrom !== undefined) {
      // Read to the end, but a row from `stepFrom` on may have been skipped: read again from there.
      if (at !== undefined && (front === undefined || at > front.at)) front = { at, seen: new Set(seen), next }
      at = stepFrom
      seen = new Set([...received].filter(([, t]) => t === stepFrom).map(([id]) => id))
      read = 0
      anchor = undefined
      passIds = new Set()
      beyond = new Set()
      restarts = 0
      totals = new Set()
    }
  }
}

/** Page sources already warned about a missing Date header (one warning each). */
const warnedNoDate = new WeakSet<PageSource>()

/** Times a tie is read again from page 1 after its anchor moved before the walk stops trusting its order. */
const MAX_RESTARTS = 2

/**
 * Requests a walk may make without moving its cursor or delivering a row before it is declared
 * stalled. A healthy walk can spend two passes over the tie at its cursor delivering nothing: a
 * resumed walk first re-reads the pages of ids its cursor already holds, and a tie read again after
 * it moved may deliver nothing. Ten more requests are margin. For a tie within one page that is 12
 * requests: a stuck walk stops within seconds, not after a window's budget.
 */
export function stallLimit(idsAtCursor: number, pageSize: number): number {
  return 10 + 2 * Math.ceil(idsAtCursor / Math.max(1, pageSize))
}

interface Start {
  at: number | undefined
  held: { at: number; ids: Set<string> } | undefined
}

function startOf(options: KeysetOptions, lagMs: number): Start {
  const cursor = options.cursor
  if (cursor === undefined) {
    if (options.since === undefined) return { at: undefined, held: undefined }
    const ms = parseInstant(options.since)
    if (Number.isNaN(ms)) throw new RangeError(`since is not a date: ${options.since}`)
    return { at: ms, held: undefined }
  }
  const since = parseInstant(cursor.since)
  if (Number.isNaN(since)) throw new RangeError(`cursor since is not a date: ${cursor.since}`)
  const held = { at: since, ids: new Set(cursor.seenIdsAtCursor) }
  // A cursor from before `rereadFrom`: the look-back behind `since`, once.
  const from = cursor.rereadFrom === undefined ? since - lagMs : Math.min(parseInstant(cursor.rereadFrom), since + 1)
  return { at: Number.isNaN(from) ? since - lagMs : from, held }
}

function seenAt(at: number | undefined, held: Start['held'], rows: readonly KeysetRow[]): Set<string> {
  const seen = new Set<string>(held !== undefined && held.at === at ? held.ids : [])
  for (const r of rows) seen.add(r.id)
  return seen
}

/**
 * The upstream time of an answer: its `Date` header (whole seconds, rounded down). Without one, the
 * local clock (when it was asked) may run ahead of the upstream's; the newest updatedAt received
 * is a time the upstream had certainly reached, so the earlier of the two is taken: the look-back
 * then spans the margin behind the newest row, whatever the local clock says.
 */
function observedAt(res: ApiResponse, askedAt: number, newest: number, noDate: () => void): number {
  const date = res.date === undefined ? Number.NaN : parseInstant(res.date)
  if (!Number.isNaN(date)) return date
  noDate()
  return Math.min(askedAt, newest)
}

function sameRow(a: KeysetRow | undefined, b: KeysetRow | undefined): boolean {
  return a !== undefined && b !== undefined && a.id === b.id && instant(a) === instant(b)
}

function key(row: KeysetRow): string {
  return `${row.id}@${instant(row)}`
}

// The cursor never goes back: until the walk has read past the stored cursor, that cursor stays.
// `seen`: the ids at `at` when `at` is a row's updatedAt, undefined while it is only where the
// walk began.
function toCursor(
  at: number | undefined,
  seen: Set<string> | undefined,
  held: Start['held'],
  rereadFrom: number,
): KeysetCursor | undefined {
  if (at === undefined) return undefined
  const [since, ids] = held !== undefined && (seen === undefined || at < held.at) ? [held.at, held.ids] : [at, seen ?? new Set<string>()]
  return {
    since: new Date(since).toISOString(),
    seenIdsAtCursor: [...ids],
    rereadFrom: new Date(Math.min(rereadFrom, since + 1)).toISOString(),
  }
}

function instant(row: KeysetRow): number {
  return parseInstant(row.updatedAt)
}
