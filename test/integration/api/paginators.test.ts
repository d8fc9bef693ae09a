// Paginators against a loopback server that implements an inclusive `since`, ties bigger than a
// page and rows updated while the walk runs. Every row must be seen, with its latest version, and
// a walk resumed from a yielded cursor must complete the picture.
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import { ApiClient } from '../../../src/api/api-client.js'
import { customObjectCursor } from '../../../src/api/custom-object-cursor.js'
import { MalformedResponseError } from '../../../src/api/errors.js'
import { pageWalk } from '../../../src/api/page-walk.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { updatedAtKeyset, type KeysetCursor, type KeysetPage } from '../../../src/api/keyset/index.js'
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

async function collect(walk: AsyncGenerator<KeysetPage>, stopAfter = Number.POSITIVE_INFINITY) {
  const seen = new Map<string, number>()
  let deliveries = 0
  let cursor: KeysetCursor | undefined
  let pages = 0
  for await (const page of walk) {
    for (const row of page.rows) {
      seen.set(row.id, row.version as number)
      deliveries++
    }
    cursor = page.cursor
    if (++pages >= stopAfter) break
  }
  return { seen, deliveries, cursor, pages }
}

function expectLatest(store: RowStore, seen: Map<string, number>) {
  const missing = [...store.rows.values()].filter((r) => seen.get(r.id) !== r.version)
  expect(missing.map((r) => `${r.id} v${r.version} seen v${String(seen.get(r.id))}`)).toEqual([])
}

describe('updatedAtKeyset', () => {
  test('walks ties bigger than a page, sending since as UTC with Z', async () => {
    const store = new RowStore()
    store.insert(40)
    store.insert(250) // one timestamp shared by two and a half pages
    store.insert(30)
    store.insert(101)
    for (let i = 0; i < 20; i++) store.insert(1)
    const { client, server } = await setup((req) => store.list(req.url))
    const { seen, deliveries, cursor } = await collect(updatedAtKeyset(client, '/api/v1/jobs', { limit: 100 }))
    expectLatest(store, seen)
    expect(deliveries).toBe(store.rows.size) // nothing delivered twice within one walk
    const sent = server.requests.map((r) => r.url.searchParams.get('since')).filter((s) => s !== null)
    for (const s of sent) expect(s).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(server.requests.every((r) => r.url.searchParams.get('sort') === 'updatedAt:asc')).toBe(true)
    const last = [...store.rows.values()].reduce((a, b) => (a.updatedAt > b.updatedAt ? a : b))
    expect(cursor?.since).toBe(new Date(last.updatedAt).toISOString())
  })

  test('a row of a tie updated while the tie is paged does not make a later row of it be skipped', async () => {
    const store = new RowStore()
    const tie = store.insert(250)
    let listed = 0
    const { client } = await setup((req) => {
      const reply = store.list(req.url)
      // After the first page of the tie: move an early row of it to the end (the rest shift left).
      if (++listed === 2) store.update(tie[3]!.id)
      return reply
    })
    const { seen } = await collect(updatedAtKeyset(client, '/api/v1/jobs'))
    expectLatest(store, seen)
  })

  test('property: under random ties, inserts, updates and deletions every row is seen with its latest version; resume completes it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 160 }), { minLength: 1, maxLength: 8 }),
        fc.array(
          fc.record({
            afterRequest: fc.integer({ min: 1, max: 12 }),
            update: fc.nat(),
            insert: fc.integer({ min: 0, max: 3 }),
            remove: fc.option(fc.nat(), { freq: 3 }),
          }),
          { maxLength: 25 },
        ),
        fc.integer({ min: 10, max: 100 }),
        fc.integer({ min: 1, max: 6 }),
        async (groups, changes, limit, stopAfter) => {
          const store = new RowStore()
          for (const g of groups) store.insert(g)
          let listed = 0
          let changing = true
          // The versions each answer reflected (taken before the changes that follow it).
          let snapshot = new Map<string, number>()
          const { client } = await setup((req) => {
            const reply = store.list(req.url)
            snapshot = new Map([...store.rows.values()].map((r) => [r.id, r.version]))
            listed++
            for (const c of changing ? changes.filter((x) => x.afterRequest === listed) : []) {
              const ids = [...store.rows.keys()]
              store.update(ids[c.update % ids.length]!)
              if (c.remove !== null && ids.length > 1) store.remove(ids[c.remove % ids.length]!)
              if (c.insert > 0) store.insert(c.insert)
            }
            return reply
          })
          // A first run stopped after a few pages, then a run resumed from its last cursor.
          const first = await collect(updatedAtKeyset(client, '/api/v1/jobs', { limit }), stopAfter)
          const rest = await collect(updatedAtKeyset(client, '/api/v1/jobs', { limit, cursor: first.cursor }))
          const seen = new Map([...first.seen, ...rest.seen])
          // Every row as it was when the last page was answered, in its latest version by then.
          const missed = [...snapshot].filter(([id, version]) => seen.get(id) !== version)
          expect(missed).toEqual([])
          // Changes made after that come with the next sweep; once quiet, a sweep finds nothing.
          changing = false
          const next = await collect(updatedAtKeyset(client, '/api/v1/jobs', { limit, cursor: rest.cursor ?? first.cursor }))
          expectLatest(store, new Map([...seen, ...next.seen]))
          const quiet = await collect(
            updatedAtKeyset(client, '/api/v1/jobs', { limit, cursor: next.cursor ?? rest.cursor ?? first.cursor }),
          )
          expect(quiet.deliveries).toBe(0)
          await client.close()
          await server?.close()
          server = undefined
        },
      ),
      { numRuns: 60 },
    )
  })

  test('look-back: a cursor of an older shape re-reads the span before it once, its own rows included; a resumed walk does not deliver them again', async () => {
    const store = new RowStore()
    for (let i = 0; i < 5; i++) store.insert(1)
    const { client } = await setup((req) => store.list(req.url))
    const first = await collect(updatedAtKeyset(client, '/api/v1/jobs'))
    expect(first.deliveries).toBe(5)
    const resumed = await collect(updatedAtKeyset(client, '/api/v1/jobs', { cursor: first.cursor }))
    expect(resumed.deliveries).toBe(0)
    const { rereadFrom: _, ...older } = first.cursor!
    // Rows at the cursor's own time inside the look-back come again: one may have been written
    // twice with the same updatedAt.
    const lookback = await collect(updatedAtKeyset(client, '/api/v1/jobs', { cursor: older, lookbackMs: 60_000 }))
    expect(lookback.deliveries).toBe(5)
  })

  test('rows read within the look-back of their time are read once more by the next walk, older ones never again', async () => {
    // Rows stamped now: when read, a late row could still appear among them.
    const store = new RowStore(Date.now())
    store.insert(5)
    const { client, server } = await setup((req) => store.list(req.url))
    const first = await collect(updatedAtKeyset(client, '/api/v1/jobs', { lookbackMs: 60_000 }))
    expect(Date.parse(first.cursor!.rereadFrom!)).toBeLessThan(Date.parse(first.cursor!.since))
    const late = store.insert(1, Date.parse(first.cursor!.since) - 1)[0]!
    const next = await collect(updatedAtKeyset(client, '/api/v1/jobs', { cursor: first.cursor, lookbackMs: 60_000 }))
    expect(next.seen.has(late.id)).toBe(true)
    // Rows a year old: settled when read. The next walk starts just after them: one empty page.
    const old = new RowStore(Date.now() - 365 * 86_400_000)
    old.insert(150, old.tick())
    server.requests.length = 0
    const settled = await setup((req) => old.list(req.url))
    const walked = await collect(updatedAtKeyset(settled.client, '/api/v1/jobs', { lookbackMs: 5_000 }))
    expect(walked.deliveries).toBe(150)
    expect(walked.cursor!.rereadFrom).toBe(new Date(Date.parse(walked.cursor!.since) + 1).toISOString())
    const idle = await collect(updatedAtKeyset(settled.client, '/api/v1/jobs', { cursor: walked.cursor, lookbackMs: 5_000 }))
    expect(idle.deliveries).toBe(0)
    expect(settled.server.requests.map((r) => r.url.searchParams.get('page'))).toEqual(['1', '2', '1'])
  })

  test('a row written again with the same updatedAt inside the look-back comes again with its new version', async () => {
    const store = new RowStore(Date.now())
    store.insert(3)
    const { client, server } = await setup((req) => store.list(req.url))
    const first = await collect(updatedAtKeyset(client, '/api/v1/jobs', { lookbackMs: 60_000 }))
    expect(first.deliveries).toBe(3)
    // A second write in the same millisecond (or on a second-precision upstream) keeps updatedAt.
    const rewritten = [...store.rows.values()].at(-1)!
    rewritten.version++
    server.requests.length = 0
    const next = await collect(updatedAtKeyset(client, '/api/v1/jobs', { cursor: first.cursor, lookbackMs: 60_000 }))
    expect(next.seen.get(rewritten.id)).toBe(2)
    // Re-delivered rows cost no request: one page, as before.
    expect(server.requests).toHaveLength(1)
  })

  test('without a Date header the look-back leans on the newest row read, not on a local clock that runs ahead; one warning', async () => {
    const store = new RowStore(Date.now() - 10_000)
    store.insert(3)
    const { client } = await setup((req) => ({ ...store.list(req.url), noDate: true }))
    // The local clock is an hour ahead of the upstream's.
    const clock = { now: () => Date.now() + 3_600_000 }
    const warnings: string[] = []
    const options = { lookbackMs: 60_000, clock, onWarning: (m: string) => warnings.push(m) }
    const first = await collect(updatedAtKeyset(client, '/api/v1/jobs', options))
    expect(Date.parse(first.cursor!.rereadFrom!)).toBeLessThan(Date.parse(first.cursor!.since))
    // A row committed late, stamped just before the newest row read: the next walk finds it.
    const late = store.insert(1, Date.parse(first.cursor!.since) - 1)[0]!
    const next = await collect(updatedAtKeyset(client, '/api/v1/jobs', { ...options, cursor: first.cursor }))
    expect(next.seen.has(late.id)).toBe(true)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('without a Date header')
  })

  test('a route that ignores since is an error, not an endless walk', async () => {
    const store = new RowStore()
    store.insert(150)
    const { client } = await setup((req) => {
      req.url.searchParams.delete('since')
      return store.list(req.url)
    })
    const walk = collect(updatedAtKeyset(client, '/api/jobs', { since: '2030-01-01T00:00:00Z' }))
    await expect(walk).rejects.toBeInstanceOf(MalformedResponseError)
  })
})

describe('pageWalk', () => {
  test('pages until page * limit >= total', async () => {
    const store = new RowStore()
    store.insert(250)
    const { client, server } = await setup((req) => {
      req.url.searchParams.set('sort', 'updatedAt:asc')
      return store.list(req.url)
    })
    const pages = []
    for await (const p of pageWalk(client, '/api/v1/clients', { limit: 100 })) pages.push(p)
    expect(pages.map((p) => p.rows.length)).toEqual([100, 100, 50])
    expect(server.requests.map((r) => r.url.searchParams.get('page'))).toEqual(['1', '2', '3'])
  })

  test('reads a legacy body whose data holds one array', async () => {
    const { client } = await setup(() => ({ body: { success: true, data: { team: [{ _id: 'u1' }, { _id: 'u2' }] } } }))
    const pages = []
    for await (const p of pageWalk(client, '/api/teams')) pages.push(p)
    expect(pages[0]?.rows).toEqual([{ _id: 'u1' }, { _id: 'u2' }])
  })
})

describe('customObjectCursor', () => {
  test('follows meta.next.cursor and bookmarks the walk start from the Date header', async () => {
    const records = Array.from({ length: 230 }, (_, i) => ({ id: i.toString(16).padStart(24, '0'), object: 'vehicles', data: {} }))
    const serverDate = 'Tue, 03 Jun 2025 10:00:00 GMT'
    const { client, server } = await setup((req) => {
      const limit = Number(req.url.searchParams.get('limit'))
      const cursor = req.url.searchParams.get('cursor')
      const start = cursor === null ? 0 : records.findIndex((r) => r.id === cursor)
      const data = records.slice(start, start + limit)
      const next = records[start + limit]
      return {
        headers: { date: serverDate },
        body: { success: true, data, meta: { next: next === undefined ? null : { cursor: next.id, limit } } },
      }
    })
    const pages = []
    for await (const p of customObjectCursor(client, 'vehicles', { updatedSince: '2025-06-01T00:00:00+02:00', marginMs: 60_000 }))
      pages.push(p)
    expect(pages.map((p) => p.rows.length)).toEqual([100, 100, 30])
    expect(pages.at(-1)?.next).toBeNull()
    expect(pages[0]?.walkStartedAt).toBe('2025-06-03T10:00:00.000Z')
    expect(pages[0]?.bookmark).toBe('2025-06-03T09:59:00.000Z')
    expect(server.requests[0]?.url.searchParams.get('updated_since')).toBe('2025-05-31T22:00:00.000Z')
    expect(server.requests[1]?.url.searchParams.get('cursor')).toBe(records[100]?.id)
  })
})
