// The webhook inbox (docs/guarantees.md, Acknowledged means stored). Deliveries are inserted
// on the mirror's writer connection in one transaction per group, and each caller learns whether its
// delivery was new or a duplicate only once the write-ahead log holding that commit is on disk.
//
// Group commit with the sync off the event loop (docs/webhooks.md). The connection commits with
// its usual synchronous=NORMAL: in WAL mode that writes the frames to the -wal file without syncing
// it. The inbox then syncs that file itself with fs.fdatasync on libuv's thread pool, and answers
// only when the sync returns. synchronous=FULL differs from NORMAL by exactly that sync at the end of
// each commit, so an acked delivery is as durable as before, but the event loop that parses requests
// and checks signatures no longer waits ~1 ms per commit. While one sync is in flight, arriving
// deliveries wait; when it returns, all of them are committed in one transaction and synced by one
// more: the group grows with the load. A checkpoint in between syncs the log before copying it and
// the database after, so frames it moved are durable too.
//
// Why not a worker thread with its own connection: that is a second writer. Every write of the main
// connection (sweeps, the processor) would then meet the worker's lock and sleep in SQLite's busy
// handler on the event loop, and a deferred transaction that read first would fail outright with
// SQLITE_BUSY when the worker committed in between. One writer keeps both impossible.
//
// Without a -wal file to sync (a database not in WAL mode), commits fall back to synchronous=FULL
// around the inbox's own transaction, on the event loop.
import fs from 'node:fs'
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { walFileOf } from '../store/sqlite/wal-file.js'
import { WebhookInboxStore, type InboxDelivery, type InboxRow } from '../store/repositories/webhook-inbox-store.js'
import type { WebhookMetrics } from './metrics.js'

export type Delivery = InboxDelivery
export type { InboxRow }

export type EnqueueResult = 'stored' | 'duplicate'

/** Starts the error kept on a delivery that waits for the mirror to work again (see markFault). */
export const MIRROR_FAULT_PREFIX = 'waiting for the mirror to work again: '

export class InboxUnavailableError extends Error {
  readonly code: 'INBOX_CLOSED' | 'INBOX_BACKLOG_FULL' | 'INBOX_WRITE_FAILED'
  constructor(code: InboxUnavailableError['code'], message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'InboxUnavailableError'
    this.code = code
  }
}

/** Syncs a file descriptor's data to disk (fs.fdatasync's shape). */
export type SyncFile = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void

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
  resolve: (result: EnqueueResult) => void
  reject: (err: Error) => void
}

export class WebhookInbox {
  readonly #sqlite: Sqlite
  readonly #store: WebhookInboxStore
  readonly #options: WebhookInboxOptions
  readonly #log: Logger
  /** The -wal file to sync after a commit; undefined: commit with synchronous=FULL instead. */
  #walPath: string | undefined
  readonly #syncFile: SyncFile
  #walFd: number | undefined
  #queue: Waiting[] = []
  #scheduled = false
  /**
   * The group whose sync is in flight, answered by the sync's callback or by close's deadline;
   * undefined when no sync is in flight.
   */
  #inFlight: Waiting[] | undefined
  #abandoned = false
  #closed = false
  /** Set when a sync failed: after that, what the OS reports for the file cannot be trusted. */
  #broken: Error | undefined
  #idle: (() => void)[] = []
  #backlog: number
  #commits = 0

  constructor(sqlite: Sqlite, options: WebhookInboxOptions) {
    this.#sqlite = sqlite
    this.#options = options
    this.#log = options.logger.child({ component: 'webhook-inbox' })
    this.#syncFile = options.syncFile ?? fs.fdatasync
    this.#store = new WebhookInboxStore(sqlite)
    // Beside SQLite's own name for the file (wal-file.ts): syncing a stale -wal beside a symlink
    // would ack deliveries that are not on disk.
    this.#walPath = walFileOf(sqlite)
    this.#backlog = this.#store.backlog()
  }

  /** close() gave up on a sync that never returned: its thread may outlive a normal process exit. */
  get abandoned(): boolean {
    return this.#abandoned
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
    return this.#backlog + this.#queue.length
  }

  /**
   * Resolves once the delivery is durably stored (or known); rejects with InboxUnavailableError.
   * `receivedAt`: when it was received, if earlier (the intake journal's relay); default now.
   */
  enqueue(delivery: Delivery, receivedAt?: string): Promise<EnqueueResult> {
    if (this.#closed)
      return Promise.reject(new InboxUnavailableError('INBOX_CLOSED', 'the webhook inbox is closed (the daemon is stopping)'))
    if (this.#broken !== undefined) {
      return Promise.reject(
        new InboxUnavailableError(
          'INBOX_WRITE_FAILED',
          `the webhook inbox cannot confirm writes since a sync of its log failed (${this.#broken.message}): check the disk, then restart the daemon`,
        ),
      )
    }
    if (this.backlog >= this.#options.maxBacklog) {
      return Promise.reject(
        new InboxUnavailableError(
          'INBOX_BACKLOG_FULL',
          `the webhook inbox holds ${this.backlog} unapplied deliveries, at the bound webhooks.maxBacklog=${this.#options.maxBacklog}: the processor is behind or stopped`,
        ),
      )
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ delivery, receivedAt: receivedAt ?? new Date(this.#options.now()).toISOString(), resolve, reject })
      this.#schedule()
    })
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
    this.#closed = true
    if (this.#inFlight === undefined && this.#queue.length > 0) this.#flush()
    const done = new Promise<void>((resolve) => {
      this.#idle.push(resolve)
      this.#settleIdle()
    })
    // Real time, not the Clock: it bounds a disk sync that a stalled disk holds.
    const timer = setTimeout(() => this.#abandonSync(), this.#options.closeTimeoutMs ?? 5_000)
    timer.unref()
    return done.finally(() => clearTimeout(timer))
  }

  /** close()'s deadline passed with a sync still in flight: answer its group 503 and stop waiting. */
  #abandonSync(): void {
    const group = this.#inFlight
    if (group === undefined) return
    this.#inFlight = undefined
    this.#abandoned = true
    // The descriptor stays open while the sync holds it; its late callback closes it.
    this.#walFd = undefined
    const ms = this.#options.closeTimeoutMs ?? 5_000
    this.#log.error(
      { deliveries: group.length, waitedMs: ms },
      'shutting down with a sync of the webhook inbox log still in flight (the disk is not answering): answering 503 to its deliveries (the sender will not retry; the next sweep recovers the changes)',
    )
    this.#syncFailed(group, new Error(`a sync of the log did not return within ${ms} ms`))
  }

  #schedule(): void {
    // A sync in flight: its completion flushes what waits (the next group).
    if (this.#scheduled || this.#inFlight !== undefined) return
    this.#scheduled = true
    // After the poll phase: every request whose body completed in this turn joins the group.
    setImmediate(() => this.#flush())
  }

  #flush(): void {
    this.#scheduled = false
    if (this.#queue.length === 0 || this.#inFlight !== undefined) return this.#settleIdle()
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
    const fd = this.#walPath === undefined ? undefined : this.#openWal()
    try {
      inserted = this.#store.insertGroup(group, fd === undefined)
    } catch (err) {
      this.#log.error(
        { err, deliveries: group.length },
        'webhook deliveries could not be stored: answering 503 (the sender will not retry; the next sweep recovers the changes)',
      )
      this.#failGroup(
        group,
        new InboxUnavailableError('INBOX_WRITE_FAILED', `the webhook inbox could not be written: ${(err as Error).message}`, {
          cause: err,
        }),
      )
      return this.#settleIdle()
    }
    this.#commits++
    const committed = performance.now()
    const m = this.#options.metrics?.intake
    if (m) m.commitMicros += Math.round((committed - started) * 1000)
    // Counted at the commit: from here the processor may apply (and settle) these rows, even
    // before the sync returns; a row it applied early is as durable as its inbox row.
    const stored = inserted.filter((x) => x).length
    this.#backlog += stored
    if (fd === undefined) return this.#durable(group, inserted, stored)
    this.#inFlight = group
    this.#syncFile(fd, (err) => {
      // close() gave up on this sync and answered its group already; only the descriptor is left.
      if (this.#inFlight !== group) return fs.close(fd, () => undefined)
      this.#inFlight = undefined
      if (err !== null) {
        this.#log.error(
          { err, deliveries: group.length },
          'syncing the webhook inbox log to disk failed: answering 503 to these and every later delivery until the daemon is restarted (the sender will not retry; the next sweep recovers the changes)',
        )
        return this.#syncFailed(group, err)
      }
      if (m) m.walSyncMicros += Math.round((performance.now() - committed) * 1000)
      this.#durable(group, inserted, stored)
      // What arrived during the sync is the next group; commit it in the next check phase, with
      // whatever else completes in this poll phase.
      if (this.#queue.length > 0) this.#schedule()
      else this.#settleIdle()
    })
  }

  /** Answers a group whose commit is on disk. */
  #durable(group: readonly Waiting[], inserted: readonly boolean[], stored: number): void {
    const m = this.#options.metrics?.intake
    if (m) {
      m.groupCommits++
      m.groupedDeliveries += group.length
    }
    group.forEach((w, i) => w.resolve(inserted[i] === true ? 'stored' : 'duplicate'))
    if (stored > 0) this.#options.onStored?.()
    this.#settleIdle()
  }

  /**
   * A sync failed or never returned. The group's rows are committed and may still be applied; what
   * is uncertain is whether they survive a power loss, and a 2xx would promise that. So the group,
   * those waiting and every later delivery are answered 503.
   */
  #syncFailed(group: readonly Waiting[], cause: Error): void {
    this.#broken = cause
    const error = new InboxUnavailableError('INBOX_WRITE_FAILED', `the webhook inbox log could not be synced to disk: ${cause.message}`, {
      cause,
    })
    this.#failGroup(group, error)
    this.#failGroup(this.#queue.splice(0), error)
    this.#settleIdle()
  }

  #failGroup(group: readonly Waiting[], error: Error): void {
    for (const w of group) w.reject(error)
  }

  #openWal(): number | undefined {
    if (this.#walFd !== undefined) return this.#walFd
    try {
      // The descriptor is only ever synced. A WAL database has its -wal file for as long as this
      // (writer) connection is open, so one descriptor serves the inbox's lifetime. 'r+': flushing a file needs write access on some platforms (Windows); nothing is written.
      this.#walFd = fs.openSync(this.#walPath!, 'r+')
    } catch (err) {
      // No -wal file to sync: fall back to FULL commits (durable, on the event loop), for good.
      this.#log.warn({ err }, "the webhook inbox cannot open the mirror's -wal file: committing with synchronous=FULL instead")
      this.#walPath = undefined
      return undefined
    }
    return this.#walFd
  }

  #settleIdle(): void {
    if (!this.#closed || this.#inFlight !== undefined || this.#queue.length > 0 || this.#idle.length === 0) return
    if (this.#walFd !== undefined) {
      fs.closeSync(this.#walFd)
      this.#walFd = undefined
    }
    for (const resolve of this.#idle.splice(0)) resolve()
  }
}
