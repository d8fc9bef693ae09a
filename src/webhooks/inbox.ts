// The webhook inbox (contract.md, Guarantees 5: acknowledged means stored). Deliveries waiting in
// one event-loop turn are inserted in one transaction committed with synchronous=FULL (group
// commit, design.md: The mirror), and each caller learns only after that commit whether its delivery
// was new or a duplicate.
//
// The inbox shares the mirror's single writer connection and raises `synchronous` to FULL around
// its own commits only. A second connection would be a second writer on the same thread: if it ever
// met the first one's lock, SQLite's busy handler would sleep on the event loop that the lock holder
// needs to finish, a stall of the whole busy timeout. better-sqlite3 is synchronous, so nothing else
// runs on the connection between the pragma, the commit and the restore. The sweeps' NORMAL commits
// lose nothing on a process crash; a FULL commit also syncs the WAL frames written before it.
import { isUtf8 } from 'node:buffer'
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/mirror-database.js'
import type { WebhookMetrics } from './metrics.js'

export interface Delivery {
  deliveryId: string
  event: string
  body: Buffer
  /** Which secret verified it (a label, never the secret). */
  verifiedWith: string
}

export type EnqueueResult = 'stored' | 'duplicate'

export class InboxUnavailableError extends Error {
  readonly code: 'INBOX_CLOSED' | 'INBOX_BACKLOG_FULL' | 'INBOX_WRITE_FAILED'
  constructor(code: InboxUnavailableError['code'], message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'InboxUnavailableError'
    this.code = code
  }
}

export interface InboxRow {
  delivery_id: string
  seq: number
  event: string
  raw: string | null
  raw_bytes: Buffer | null
}

export interface WebhookInboxOptions {
  now: () => number
  /** Unapplied deliveries beyond which intake answers 503 (config webhooks.maxBacklog). */
  maxBacklog: number
  logger: Logger
  /** Called after a commit that stored at least one new delivery (wakes the processor). */
  onStored?: () => void
  metrics?: WebhookMetrics
}

interface Waiting {
  delivery: Delivery
  receivedAt: string
  resolve: (result: EnqueueResult) => void
  reject: (err: Error) => void
}

export class WebhookInbox {
  readonly #sqlite: Sqlite
  readonly #options: WebhookInboxOptions
  readonly #log: Logger
  readonly #insert
  readonly #commitGroup
  readonly #full
  readonly #restore
  readonly #pendingStmt
  readonly #processedStmt
  readonly #failedStmt
  #queue: Waiting[] = []
  #scheduled = false
  #closed = false
  #backlog: number

  constructor(sqlite: Sqlite, options: WebhookInboxOptions) {
    this.#sqlite = sqlite
    this.#options = options
    this.#log = options.logger.child({ component: 'webhook-inbox' })
    this.#insert = sqlite.prepare(
      `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, raw_bytes, verified_with)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM webhook_inbox), ?, ?, ?, ?, ?)
       ON CONFLICT(delivery_id) DO NOTHING`,
    )
    this.#commitGroup = sqlite.transaction((group: readonly Waiting[]) =>
      group.map(({ delivery: d, receivedAt }) => {
        const text = isUtf8(d.body) ? d.body.toString('utf8') : null
        return this.#insert.run(d.deliveryId, d.event, receivedAt, text, text === null ? d.body : null, d.verifiedWith).changes > 0
      }),
    )
    const previous = sqlite.pragma('synchronous', { simple: true }) as number
    this.#full = sqlite.prepare('PRAGMA synchronous = FULL')
    this.#restore = sqlite.prepare(`PRAGMA synchronous = ${previous}`)
    this.#pendingStmt = sqlite.prepare(
      `SELECT delivery_id, seq, event, raw, raw_bytes FROM webhook_inbox
       WHERE processed_at IS NULL AND error IS NULL AND seq > ? ORDER BY seq LIMIT ?`,
    )
    this.#processedStmt = sqlite.prepare(`UPDATE webhook_inbox SET processed_at = ?, attempts = attempts + 1 WHERE delivery_id = ?`)
    this.#failedStmt = sqlite.prepare(`UPDATE webhook_inbox SET error = ?, attempts = attempts + 1 WHERE delivery_id = ?`)
    this.#backlog = sqlite.prepare(`SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL AND error IS NULL`).pluck().get() as number
  }

  /** Deliveries stored but not yet applied, plus those waiting for the next group commit. */
  get backlog(): number {
    return this.#backlog + this.#queue.length
  }

  /** Resolves once the delivery is durably stored (or known); rejects with InboxUnavailableError. */
  enqueue(delivery: Delivery): Promise<EnqueueResult> {
    if (this.#closed) return Promise.reject(new InboxUnavailableError('INBOX_CLOSED', 'the webhook inbox is closed (the daemon is stopping)'))
    if (this.backlog >= this.#options.maxBacklog) {
      return Promise.reject(
        new InboxUnavailableError(
          'INBOX_BACKLOG_FULL',
          `the webhook inbox holds ${this.backlog} unapplied deliveries, at the bound webhooks.maxBacklog=${this.#options.maxBacklog}: the processor is behind or stopped`,
        ),
      )
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ delivery, receivedAt: new Date(this.#options.now()).toISOString(), resolve, reject })
      if (!this.#scheduled) {
        this.#scheduled = true
        // After the poll phase: every request whose body completed in this turn joins the group.
        setImmediate(() => this.#flush())
      }
    })
  }

  /** Unapplied rows after `afterSeq`, in receipt order. */
  pending(afterSeq: number, limit: number): InboxRow[] {
    return this.#pendingStmt.all(afterSeq, limit) as InboxRow[]
  }

  /** Marks a row applied; run it in the transaction that applied the row. */
  markProcessed(deliveryId: string, nowIso: string): void {
    this.#processedStmt.run(nowIso, deliveryId)
  }

  /** Keeps a row with its error; it is never picked up again by `pending`. */
  markFailed(deliveryId: string, error: string): void {
    this.#failedStmt.run(error, deliveryId)
  }

  /** The processor settled `count` rows (applied or failed) in a committed transaction. */
  settled(count: number): void {
    this.#backlog = Math.max(0, this.#backlog - count)
  }

  /** Puts rows kept with exactly this error back in line (once, e.g. when their applier arrives). */
  requeueErrors(error: string): number {
    const n = this.#sqlite.prepare(`UPDATE webhook_inbox SET error = NULL WHERE processed_at IS NULL AND error = ?`).run(error).changes
    this.#backlog += n
    return n
  }

  /** Stops taking deliveries; those already waiting are still committed. */
  close(): void {
    this.#closed = true
    if (this.#queue.length > 0) this.#flush()
  }

  #flush(): void {
    this.#scheduled = false
    if (this.#queue.length === 0) return
    if (this.#sqlite.inTransaction) {
      // Another writer holds a transaction open across an await: joining it would make our commit
      // depend on theirs. Wait for the next turn (no write path of this project does that today).
      this.#scheduled = true
      setImmediate(() => this.#flush())
      return
    }
    const group = this.#queue
    this.#queue = []
    let inserted: boolean[]
    const started = performance.now()
    try {
      this.#full.run()
      try {
        inserted = this.#commitGroup(group)
      } finally {
        this.#restore.run()
      }
    } catch (err) {
      this.#log.error({ err, deliveries: group.length }, 'webhook deliveries could not be stored: answering 503 (the sender will not retry; the next sweep recovers the changes)')
      const error = new InboxUnavailableError('INBOX_WRITE_FAILED', `the webhook inbox could not be written: ${(err as Error).message}`, { cause: err })
      for (const w of group) w.reject(error)
      return
    }
    const m = this.#options.metrics?.intake
    if (m) {
      m.groupCommits++
      m.groupedDeliveries += group.length
      m.commitMicros += Math.round((performance.now() - started) * 1000)
    }
    let stored = 0
    group.forEach((w, i) => {
      if (inserted[i] === true) stored++
      w.resolve(inserted[i] === true ? 'stored' : 'duplicate')
    })
    this.#backlog += stored
    if (stored > 0) this.#options.onStored?.()
  }
}
