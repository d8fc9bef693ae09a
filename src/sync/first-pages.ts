// The sizes of a backfill before it starts (docs/sweeping.md, Progress). When a batch walks record streams
// from the start, the first page of each is read first, one after the other: its `meta.total` is
// the stream's size, so the estimate covers every stream from the beginning instead of naming those
// not started yet. Each is the request the stream's walk begins with (src/api/keyset/keyset-walk.ts: page 1,
// no `since`); it is kept and handed to that walk as its first answer, which stores its rows and
// counts the request as its own: the batch makes no request it would not have made.
import type { ApiResponse } from '../api/api-client.js'
import { ApiError } from '../api/errors.js'
import { isFenced } from '../api/governor/index.js'
import { extractRows } from '../api/page-rows.js'
import { ListMetaSchema } from '../api/response-schemas.js'
import { queryString, type Query } from '../api/routes.js'
import { KeysetCursorSchema, type PageSource } from '../api/keyset/index.js'
import type { RecordStream } from '../model/streams.js'
import { CountingSource } from './counting-source.js'
import type { SyncContext } from './sync-context.js'

/** A first page read ahead: the request and its answer (or the failure it met after its retries). */
interface FirstPage {
  route: string
  query: Query
  /** When its last attempt started, and the attempts it took (retries included). */
  startedAt: number
  attempts: number
  answer: { ok: true; response: ApiResponse } | { ok: false; error: Error }
}

/** The first pages read ahead, by stream; each is taken once, by that stream's walk. */
export class FirstPages {
  readonly #pages = new Map<string, FirstPage>()

  set(stream: string, page: FirstPage): void {
    this.#pages.set(stream, page)
  }

  /**
   * `source` with the stream's first page, if one was read ahead, as the answer to the walk's first
   * request when it is that very request; the page's request counts on `source` then.
   */
  take(stream: string, source: CountingSource): PageSource {
    const page = this.#pages.get(stream)
    if (page === undefined) return source
    this.#pages.delete(stream)
    let used = false
    return {
      get: (path, query, options) => {
        if (used || path !== page.route || queryString(sorted(query)) !== queryString(sorted(page.query)))
          return source.get(path, query, options)
        used = true
        source.countStarted(page.startedAt, page.attempts)
        return page.answer.ok ? Promise.resolve(page.answer.response) : Promise.reject(page.answer.error)
      },
    }
  }
}

/**
 * Reads the first page of each stream of `streams` that a sweep would walk from the start (no
 * stored cursor that reads back, or `full`), and tells the progress sink every size. Reads nothing
 * without a progress sink (no estimate to make). Stops at a refused key: every stream would get the
 * same answer.
 */
export async function readFirstPages(ctx: SyncContext, streams: readonly RecordStream[], options: { full?: boolean }): Promise<FirstPages> {
  const pages = new FirstPages()
  const backfills = streams.filter((s) => options.full === true || !hasCursor(ctx, s.name))
  if (ctx.progress === undefined || backfills.length === 0) return pages
  const sizes: { stream: string; rowsRemaining: number | undefined }[] = []
  for (const stream of backfills) {
    if (ctx.signal?.aborted === true) break
    // The first request of a walk from the start (src/api/keyset/keyset-walk.ts), at the same priority.
    const query: Query = { sort: 'updatedAt:asc', limit: Math.min(100, Math.max(1, Math.floor(ctx.options.pageSize))), page: 1 }
    const source = new CountingSource(ctx.upstream, ctx.now)
    source.who = `sweep ${stream.name} (first page)`
    const asked = () => ({ route: stream.route, query, startedAt: source.lastStartedAt, attempts: source.requests })
    try {
      const response = await source.get(stream.route, query, { priority: 'reconcile', signal: ctx.signal })
      pages.set(stream.name, { ...asked(), answer: { ok: true, response } })
      const total = ListMetaSchema.safeParse(response.meta ?? {}).data?.total
      sizes.push({
        stream: stream.name,
        rowsRemaining: total === undefined ? undefined : Math.max(0, total - rowsOf(response, stream.route)),
      })
    } catch (error) {
      // Stopped, or fenced (the lease passed on: each walk meets the same refusal, nothing sent).
      if (stopped(ctx) || isFenced(error)) break
      // A failure (after the client's retries) is the walk's first answer too, as if it had asked.
      pages.set(stream.name, { ...asked(), answer: { ok: false, error: error instanceof Error ? error : new Error(String(error)) } })
      if (error instanceof ApiError && error.kind === 'unauthorized') break
      sizes.push({ stream: stream.name, rowsRemaining: undefined })
    }
  }
  ctx.progress.plan?.(sizes)
  return pages
}

/** Whether a sweep of `stream` would resume from a stored cursor (one that cannot be read restarts it from the start). */
function hasCursor(ctx: SyncContext, stream: string): boolean {
  const stored = ctx.state.readCursor(stream, KeysetCursorSchema)
  return stored.ok && stored.cursor !== undefined
}

function stopped(ctx: SyncContext): boolean {
  return ctx.signal?.aborted === true
}

function rowsOf(response: ApiResponse, route: string): number {
  try {
    return extractRows(response, route).length
  } catch {
    // The walk reports the malformed answer itself.
    return 0
  }
}

function sorted(query: Query | undefined): Query {
  return Object.fromEntries(Object.entries(query ?? {}).sort(([a], [b]) => a.localeCompare(b)))
}
