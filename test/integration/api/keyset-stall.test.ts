// The updatedAt keyset against upstreams that do not page a tie as documented. A route that
// ignores `page` inside a tie bigger than a page once made an endless request loop (1,781 requests
// in 40 s, nothing new): the walk must end with a typed error naming the route, after a bounded
// number of requests, and an honest route with a huge tie must not be taken for a stall.
import { afterEach, describe, expect, test } from 'vitest'
import { ApiClient } from '../../../src/api/api-client.js'
import { PagingStalledError } from '../../../src/api/errors.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { stallLimit, updatedAtKeyset, type KeysetOptions } from '../../../src/api/keyset/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { RowStore, startLoopback, type Handler, type Loopback } from '../../support/loopback.js'

let server: Loopback | undefined
let client: ApiClient | undefined
afterEach(async () => {
  await client?.close()
  await server?.close()
  client = undefined
  server = undefined
})

async function setup(handler: Handler) {
  server = await startLoopback(handler)
  const governor = new RequestGovernor({ limitPerMinute: 100_000, burst: 10_000, maxInFlight: 4 })
  client = new ApiClient({ baseUrl: server.baseUrl, apiKey: 'svc_live_test', governor, logger: createLogger({ level: 'silent' }) })
  return { server, client }
}

/** Walks to the end or the first error; returns the ids delivered and the error. */
async function walk(c: ApiClient, options: KeysetOptions) {
  const delivered: string[] = []
  try {
    for await (const page of updatedAtKeyset(c, '/api/v1/jobs', options)) delivered.push(...page.rows.map((r) => r.id))
    return { delivered, error: undefined }
  } catch (error) {
    return { delivered, error }
  }
}

function withoutPage(url: URL): URL {
  const copy = new URL(url)
  copy.searchParams.delete('page')
  return copy
}

describe('an upstream that ignores page inside a full tie', () => {
  test('ends the stepping at the first repeated tie page with PAGING_STALLED naming the route, not an endless loop', async () => {
    const store = new RowStore()
    store.insert(30)
    const tie = store.insert(250)
    store.insert(20)
    const { client, server } = await setup((req) => store.list(withoutPage(req.url)))
    const { delivered, error } = await walk(client, { limit: 100 })
    expect(error).toBeInstanceOf(PagingStalledError)
    expect(error).toMatchObject({ code: 'PAGING_STALLED', route: 'GET /api/v1/jobs' })
    expect((error as Error).message).toContain('GET /api/v1/jobs')
    expect((error as Error).message).toContain('ignores page')
    // The first page ends 70 rows into the tie; the step into it (since=tie, page=2, limit=69, so
    // overlapping the rows read by one) comes back as the tie's first 69 rows: two requests.
    expect(server.requests).toHaveLength(2)
    expect(server.requests.map((r) => [r.url.searchParams.get('page'), r.url.searchParams.get('limit')])).toEqual([
      ['1', '100'],
      ['2', '69'],
    ])
    // What was delivered is the first rows and the tie's first 70; nothing past the tie.
    expect(delivered).toHaveLength(30 + 70)
    expect(new Set(delivered).size).toBe(delivered.length)
    expect(delivered.filter((id) => tie.some((t) => t.id === id))).toHaveLength(70)
  })

  test('one that also shuffles the tie fails after the stall limit of requests without progress', async () => {
    const store = new RowStore()
    const tie = store.insert(2000)
    // A deterministic shuffle per request: 100 ids of the tie, whatever page asks.
    let n = 0
    const { client, server } = await setup((req) => {
      const seed = ++n
      const rows = [...tie].sort((a, b) => hash(a.id, seed) - hash(b.id, seed)).slice(0, 100)
      return {
        body: {
          success: true,
          data: rows.map((r) => ({ id: r.id, updatedAt: new Date(r.updatedAt).toISOString() })),
          meta: { page: Number(req.url.searchParams.get('page')), limit: 100, total: 2000 },
        },
      }
    })
    const at = new Date(tie[0]!.updatedAt).toISOString()
    // A resumed walk whose cursor already holds every id of the tie: nothing is ever new.
    const { delivered, error } = await walk(client, { limit: 100, cursor: { since: at, seenIdsAtCursor: tie.map((r) => r.id) } })
    const limit = stallLimit(2000, 100)
    expect(limit).toBe(50)
    expect(error).toBeInstanceOf(PagingStalledError)
    // Within the stall limit: after two re-reads of the tie the walk stops trusting its order and
    // steps on, until a page brings only ids this pass already received (page ignored).
    expect(error).toMatchObject({ code: 'PAGING_STALLED', route: 'GET /api/v1/jobs' })
    expect(server.requests.length).toBeLessThanOrEqual(limit)
    expect(delivered).toEqual([])
  })
})

describe('an honest upstream is not taken for a stall', () => {
  test('a resumed walk through a tie of 2,600 rows its cursor mostly holds reads the rest and ends', async () => {
    const store = new RowStore()
    const tie = store.insert(2600)
    const after = store.insert(5)
    const { client, server } = await setup((req) => store.list(req.url))
    const at = new Date(tie[0]!.updatedAt).toISOString()
    const held = tie.slice(0, 2500).map((r) => r.id)
    const { delivered, error } = await walk(client, { limit: 100, cursor: { since: at, seenIdsAtCursor: held } })
    expect(error).toBeUndefined()
    expect(delivered.sort()).toEqual([...tie.slice(2500), ...after].map((r) => r.id).sort())
    // 25 pages of held ids delivered nothing, yet within the limit for a cursor holding 2,500 ids.
    expect(server.requests.length).toBeGreaterThan(25)
  })
})

function hash(id: string, seed: number): number {
  let h = seed * 2654435761
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619)
  return h >>> 0
}
