// The webhook inbox (docs/guarantees.md, Acknowledged means stored). Deliveries are inserted
// on the mirror's writer connection in one transaction per group, and each caller learns whether its
// delivery was new or a duplicate only once the write-ahead log holding that commit is on disk.
//
// The group commit itself (one transaction per group, the -wal synced off the event loop, the
// FULL fallback, the close deadline) is group-commit.ts, shared with the intake journal.
//
// Why not a worker thread with its own connection: that is a second writer. Every write of the main
// connection (sweeps, the processor) would then meet the worker's lock and sleep in SQLite's busy
// handler on the event loop, and a deferred transaction that read first would fail outright with
// SQLITE_BUSY when the worker committed in between. One writer keeps both impossible.
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { walFileOf } from '../store/sqlite/wal-file.js'
import { WebhookInboxStore, type InboxDelivery, type InboxRow } from '../store/repositories/webhook-inbox-store.js'
import { GroupCommit, InboxUnavailableError, type SyncFile } from './group-commit.js'
import type { WebhookMetrics } from './metrics.js'

export { InboxUnavailableError, type SyncFile }
export type Delivery = InboxDelivery
export type { InboxRow }

export type EnqueueResult = 'stored' | 'duplicate'

/** Starts the error kept on a delivery that waits for the mirror to work again (see markFault). */
export const MIRROR_FAULT_PREFIX = 'waiting for the mirror to work again: '

export interface WebhookInboxOptions {
  now: () => number
  /** Unapplied deliveries beyond which intake answers 503 (config webhooks.maxBacklog). */
  maxBacklog: number
  logger: Logger
  /** Called after a durable commit that stored at least one new delivery (wakes the processor). */
  onStored?: () => void
  metrics?: WebhookMetrics
  /** How the -wal file is synced; fs.fdatasync unless a test needs to hold or fail the sync. */
  syncFile?: SyncFile
  /**
   * How long close() waits for a sync in flight (ms, default 5,000). A sync that hangs (a stalled
   * disk) must not hold the daemon past its shutdown budget: its deliveries are answered 503.
   */
  closeTimeoutMs?: number
}

interface Waiting {
  delivery: Delivery
  receivedAt: string
}

export class WebhookInbox {
  readonly #store: WebhookInboxStore
  readonly #options: WebhookInboxOptions
  readonly #group: GroupCommit<Waiting, boolean>
  #backlog: number
  #commits = 0

  constructor(sqlite: Sqlite, options: WebhookInboxOptions) {
    this.#options = options
    this.#store = new WebhookInboxStore(sqlite)
    this.#backlog = this.#store.backlog()
    this.#group = new GroupCommit<Waiting, boolean>({
      name: 'webhook inbox',
      logger: options.logger.child({ component: 'webhook-inbox' }),
      commit: (group, full) => this.#store.insertGroup(group, full),
      // Beside SQLite's own name for the file (wal-file.ts): syncing a stale -wal beside a symlink
      // would ack deliveries that are not on disk.
      walPath: walFileOf(sqlite),
      ...(options.syncFile === undefined ? {} : { syncFile: options.syncFile }),
      ...(options.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: options.closeTimeoutMs }),
      ...(options.metrics === undefined ? {} : { metrics: options.metrics.intake }),
      // Another writer holds a transaction open across an await (no write path of this project does today).
      busy: () => sqlite.inTransaction,
      committed: (_group, inserted) => {
        this.#commits++
        // Counted at the commit: from here the processor may apply (and settle) these rows, even
        // before the sync returns; a row it applied early is as durable as its inbox row.
        this.#backlog += inserted.filter((x) => x).length
      },
      durable: (_group, inserted) => {
        if (inserted.some((x) => x)) options.onStored?.()
      },
    })
  }

  /** close() gave up on a sync that never returned: its thread may outlive a normal process exit. */
  get abandoned(): boolean {
    return this.#group.abandoned
  }

  /** Group commits so far; while it moves, deliveries are arriving (the processor yields to them). */
  get commits(): number {
    return this.#commits
  }

  /**
   * The backlog is past half of webhooks.maxBacklog. The processor then stops yielding to the
   * intake: acks slow down rather than reach the bound, where a 503 would lose the delivery until
   * the next sweep (the upstream never re-sends).
   */
  get filling(): boolean {
    return this.backlog * 2 >= this.#options.maxBacklog
  }

  /** Deliveries stored but not yet applied, plus those waiting for the next group commit. */
  get backlog(): number {
    return this.#backlog + this.#group.queued
  }

  /**
   * Resolves once the delivery is durably stored (or known); rejects with InboxUnavailableError.
   * `receivedAt`: when it was received, if earlier (the intake journal's relay); default now.
   */
  enqueue(delivery: Delivery, receivedAt?: string): Promise<EnqueueResult> {
    const refused = this.#group.refusal()
    if (refused !== undefined) return Promise.reject(refused)
    if (this.backlog >= this.#options.maxBacklog) {
      return Promise.reject(
        new InboxUnavailableError(
          'INBOX_BACKLOG_FULL',
          `the webhook inbox holds ${this.backlog} unapplied deliveries, at the bound webhooks.maxBacklog=${this.#options.maxBacklog}: the processor is behind or stopped`,
        ),
      )
    }
    const item = { delivery, receivedAt: receivedAt ?? new Date(this.#options.now()).toISOString() }
    return this.#group.submit(item).then((inserted) => (inserted ? 'stored' : 'duplicate'))
  }

  /** The delivery id is stored (applied or not). */
  has(deliveryId: string): boolean {
    return this.#store.has(deliveryId)
  }

  /** Unapplied rows after `afterSeq`, in receipt order. */
  pending(afterSeq: number, limit: number): InboxRow[] {
    return this.#store.pending(afterSeq, limit)
  }

  /** Marks a row applied; run it in the transaction that applied the row. */
  markProcessed(deliveryId: string, nowIso: string): void {
    this.#store.markProcessed(deliveryId, nowIso)
  }

  /**
   * Marks applied every row still pending with seq in [first, last]: one statement for a slice's
   * rows. Run it in the transaction that applied them, after marking those it could not apply.
   */
  markProcessedThrough(first: number, last: number, nowIso: string): void {
    this.#store.markProcessedThrough(first, last, nowIso)
  }

  /** Marks a row settled without applying it (its stream is not selected), with the reason. */
  markSkipped(deliveryId: string, reason: string, nowIso: string): void {
    this.#store.markSkipped(deliveryId, reason, nowIso)
  }

  /** Keeps a row with its error; it is never picked up again by `pending`. */
  markFailed(deliveryId: string, error: string): void {
    this.#store.markFailed(deliveryId, error)
  }

  /**
   * Keeps the error of a mirror fault (disk full, corrupt pages) on the delivery the processor was
   * at, for `status` to show, with a prefix: it is not the delivery's fault, and the processor puts
   * it back in line (clearFault) before each try. Not settled: it still counts in the backlog.
   */
  markFault(deliveryId: string, error: string): void {
    this.#store.markFault(deliveryId, `${MIRROR_FAULT_PREFIX}${error}`)
  }

  /** Puts a delivery markFault kept back in line (the same process, so the backlog still counts it). */
  clearFault(deliveryId: string): void {
    this.#store.clearFault(deliveryId, MIRROR_FAULT_PREFIX)
  }

  /** At start: puts back in line every delivery an earlier process kept with a mirror fault. */
  requeueFaults(): number {
    const n = this.#store.requeueWithPrefix(MIRROR_FAULT_PREFIX)
    this.#backlog += n
    return n
  }

  /** The processor settled `count` rows (applied or failed) in a committed transaction. */
  settled(count: number): void {
    this.#backlog = Math.max(0, this.#backlog - count)
  }

  /** Puts rows kept with exactly this error back in line (once, e.g. when their applier arrives). */
  requeueErrors(error: string): number {
    const n = this.#store.requeueError(error)
    this.#backlog += n
    return n
  }

  /**
   * Stops taking deliveries; those already waiting are still committed and synced. Resolves when
   * every caller has its answer, so the connection may be closed after it.
   */
  close(): Promise<void> {
    return this.#group.close()
  }
}
