// Coalesced follow-up GETs for partial deliveries (docs/webhooks.md: a partial payload queues
// one coalesced follow-up GET for that record), at the governor's top priority ('webhook'). One GET
// per record at a time; a request that arrives while one is in flight asks for exactly one more
// afterwards, because the GET in flight may have been answered before the change it announces.
import type { RecordStream } from '../model/streams.js'
import type { Payload } from '../model/rows.js'
import { isFenced, NotFoundError, type ApiResponse, type CallOptions } from '../api/index.js'
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import type { RecordWriter } from '../store/repositories/record-writer.js'
import type { WebhookMetrics } from './metrics.js'

export interface FollowUpClient {
  get(path: string, query: undefined, options: CallOptions): Promise<Pick<ApiResponse, 'data'>>
}

export interface FollowUpOptions {
  client: FollowUpClient
  sqlite: Sqlite
  writer: (table: string) => RecordWriter
  logger: Logger
  now: () => number
  metrics?: WebhookMetrics | undefined
}

export class FollowUps {
  readonly #options: FollowUpOptions
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #again = new Set<string>()
  readonly #abort = new AbortController()

  constructor(options: FollowUpOptions) {
    this.#options = options
  }

  request(stream: RecordStream, id: string): void {
    if (this.#abort.signal.aborted) return
    const key = `${stream.name}/${id}`
    if (this.#inFlight.has(key)) {
      this.#again.add(key)
      return
    }
    const run = this.#fetch(stream, id).finally(() => {
      this.#inFlight.delete(key)
      if (this.#again.delete(key)) this.request(stream, id)
    })
    this.#inFlight.set(key, run)
  }

  get pending(): number {
    return this.#inFlight.size
  }

  /** Resolves when no follow-up is in flight (those queued meanwhile included). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight.values())
  }

  /** Cancels the GETs in flight; the next sweep covers what they would have brought. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error('webhook processor stopped'))
    this.#again.clear()
    await this.idle()
  }

  async #fetch(stream: RecordStream, id: string): Promise<void> {
    const { client, sqlite, writer, logger, now, metrics } = this.#options
    if (metrics) metrics.processor.followUps++
    // The request's start bounds what the answer can know: a deletion recorded before it and a
    // record still returned means the record is live again (record-writer.ts, observedAt).
    const observedAt = new Date(now()).toISOString()
    try {
      const res = await client.get(`${stream.route}/${encodeURIComponent(id)}`, undefined, {
        priority: 'webhook',
        who: 'webhook follow-up',
        signal: this.#abort.signal,
      })
      const row = stream.toRow(res.data as Payload)
      sqlite.transaction(() => writer(stream.table).upsert([row], { now: new Date(now()).toISOString(), observedAt, replaceTies: true }))()
    } catch (err) {
      if (err instanceof NotFoundError) {
        // A GET answering 404 is how reconciliation confirms a deletion too (docs/sweeping.md, How the
        // sync stays exact).
        sqlite.transaction(() => writer(stream.table).markDeleted([id], new Date(now()).toISOString()))()
        return
      }
      if (this.#abort.signal.aborted) return
      if (isFenced(err)) {
        // The lease moved (docs/sharding.md, Wiring): the new owner applies the delivery again from
        // the shared inbox and fetches the record itself. Nothing failed here.
        logger.info({ stream: stream.name, id }, 'webhook follow-up GET not sent: the account moved to another replica, which fetches it')
        return
      }
      if (metrics) metrics.processor.followUpFailures++
      logger.warn({ err, stream: stream.name, id }, 'webhook follow-up GET failed: the next sweep brings the record')
    }
  }
}
