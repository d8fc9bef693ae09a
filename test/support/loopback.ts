// A small upstream double on 127.0.0.1 for the client and paginator tests (not the emulator):
// scripted answers per request, and a list of rows that honours sort=updatedAt:asc, an inclusive
// `since`, page/limit (clamped to 100) and meta.total, with a hook to change rows between requests.
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Seen {
  method: string
  url: URL
  headers: http.IncomingHttpHeaders
  body: string
  at: number
}

export interface Reply {
  status?: number
  headers?: Record<string, string>
  /** Answer without the `Date` header Node adds by default. */
  noDate?: boolean
  /** A string is sent as is; anything else as JSON. */
  body?: unknown
  /** Destroy the socket instead of answering. */
  destroy?: boolean
}

export type Handler = (req: Seen) => Reply | undefined

export interface Loopback {
  baseUrl: string
  port: number
  requests: Seen[]
  close(): Promise<void>
}

export async function startLoopback(handler: Handler): Promise<Loopback> {
  const requests: Seen[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const seen: Seen = {
        method: req.method ?? 'GET',
        url: new URL(req.url ?? '/', 'http://127.0.0.1'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      }
      requests.push(seen)
      const reply = handler(seen) ?? { status: 404, body: { success: false, code: 'NOT_FOUND', message: 'Not found' } }
      if (reply.destroy === true) {
        req.socket.destroy()
        return
      }
      const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? { success: true })
      if (reply.noDate === true) res.sendDate = false
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers })
      res.end(text)
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export interface StoredRow {
  id: string
  updatedAt: number
  version: number
}

/** Rows behind a v1 list route, with the list conventions of the spec. */
export class RowStore {
  readonly rows = new Map<string, StoredRow>()
  #clock: number
  #nextId = 1

  constructor(startMs = Date.UTC(2025, 0, 1)) {
    this.#clock = startMs
  }

  /** Adds `count` rows sharing the timestamp `at` (default: the next tick). */
  insert(count: number, at?: number): StoredRow[] {
    const ts = at ?? this.tick()
    const added: StoredRow[] = []
    for (let i = 0; i < count; i++) {
      const row = { id: (this.#nextId++).toString(16).padStart(24, '0'), updatedAt: ts, version: 1 }
      this.rows.set(row.id, row)
      added.push(row)
    }
    return added
  }

  /** An update stamps the row with the store's "now", which only moves forward. */
  update(id: string): void {
    const row = this.rows.get(id)
    if (row === undefined) return
    row.updatedAt = this.tick()
    row.version++
  }

  /** A deletion: the row leaves the list (soft-deleted upstream rows are hidden from lists). */
  remove(id: string): void {
    this.rows.delete(id)
  }

  tick(): number {
    this.#clock += 1 + (this.#nextId % 3)
    return this.#clock
  }

  list(url: URL): Reply {
    const limit = Math.min(100, Math.max(1, Number(url.searchParams.get('limit') ?? 30)))
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1))
    const sinceText = url.searchParams.get('since')
    const since = sinceText === null ? Number.NEGATIVE_INFINITY : Date.parse(sinceText)
    if (Number.isNaN(since)) return { status: 400, body: { success: false, error: 'since is not a date', message: 'since is not a date' } }
    if (url.searchParams.get('sort') !== 'updatedAt:asc')
      return { status: 400, body: { success: false, message: 'this double only sorts by updatedAt:asc' } }
    const matching = [...this.rows.values()]
      .filter((r) => r.updatedAt >= since)
      .sort((a, b) => a.updatedAt - b.updatedAt || a.id.localeCompare(b.id))
    const data = matching.slice((page - 1) * limit, page * limit).map((r) => ({
      id: r.id,
      updatedAt: new Date(r.updatedAt).toISOString(),
      version: r.version,
    }))
    return { body: { success: true, data, meta: { page, limit, total: matching.length } } }
  }
}
