// One group commit with the sync off the event loop (docs/webhooks.md), shared by each account's
// inbox (inbox.ts) and the process's intake journal (intake-journal.ts) so that both keep the same
// safeguards. What callers submit in one event-loop turn is committed in one transaction with
// synchronous=NORMAL, the -wal file is opened and synced once by fs.fdatasync on libuv's pool, and
// only then is each caller answered; what arrives during a sync is the next group. Without a -wal
// file to open, commits fall back to synchronous=FULL on the loop, for good. A failed sync answers 503 to
// its group and every later one (the OS's word on the file cannot be trusted after it); close()
// drains, and gives up on a sync that does not return within its deadline (a stalled disk).
import fs from 'node:fs'
import type { Logger } from '../log/logger.js'

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

/** The counters a group commit keeps (WebhookMetrics.intake has them). */
export interface GroupCommitMetrics {
  groupCommits: number
  groupedDeliveries: number
  commitMicros: number
  walSyncMicros: number
}

export interface GroupCommitOptions<I, R> {
  /** What log lines and errors call the store ("webhook inbox", "intake journal"). */
  name: string
  logger: Logger
  /** Commits the items in one transaction, one result each; `full`: with synchronous=FULL (no -wal to sync). */
  commit(items: readonly I[], full: boolean): R[]
  /** The -wal file synced after each commit; undefined: every commit with synchronous=FULL. */
  walPath: string | undefined
  /** fs.fdatasync unless a test needs to hold or fail the sync. */
  syncFile?: SyncFile
  /** How long close() waits for a sync in flight (ms, default 5,000). */
  closeTimeoutMs?: number
  metrics?: GroupCommitMetrics
  /** True: not this turn (another writer holds a transaction open across an await); tried next turn. */
  busy?: () => boolean
  /** After the commit, before its sync (a committed row may be read from here on). */
  committed?: (items: readonly I[], results: readonly R[]) => void
  /** After the sync, before the callers are answered. */
  durable?: (items: readonly I[], results: readonly R[]) => void
}

interface Waiting<I, R> {
  item: I
  resolve: (result: R) => void
  reject: (err: Error) => void
}

export class GroupCommit<I, R> {
  readonly #o: GroupCommitOptions<I, R>
  readonly #log: Logger
  readonly #syncFile: SyncFile
  #walPath: string | undefined
  #queue: Waiting<I, R>[] = []
  #scheduled = false
  /** The group whose sync is in flight, answered by the sync's callback or by close's deadline. */
  #inFlight: Waiting<I, R>[] | undefined
  #abandoned = false
  #closed = false
  #broken: Error | undefined
  #idle: (() => void)[] = []

  constructor(options: GroupCommitOptions<I, R>) {
    this.#o = options
    this.#log = options.logger
    this.#syncFile = options.syncFile ?? fs.fdatasync
    this.#walPath = options.walPath
  }

  /** Items waiting for the next commit. */
  get queued(): number {
    return this.#queue.length
  }

  /** close() gave up on a sync that never returned: its thread may outlive a normal process exit. */
  get abandoned(): boolean {
    return this.#abandoned
  }

  /** Why no item can be taken now (closed, or a sync failed); undefined when one can. */
  refusal(): InboxUnavailableError | undefined {
    if (this.#closed) return new InboxUnavailableError('INBOX_CLOSED', `the ${this.#o.name} is closed (the daemon is stopping)`)
    if (this.#broken === undefined) return undefined
    return new InboxUnavailableError(
      'INBOX_WRITE_FAILED',
      `the ${this.#o.name} cannot confirm writes since a sync of its log failed (${this.#broken.message}): check the disk, then restart the daemon`,
    )
  }

  /** Resolves with the item's result once its commit is on disk; rejects with InboxUnavailableError. */
  submit(item: I): Promise<R> {
    const refused = this.refusal()
    if (refused !== undefined) return Promise.reject(refused)
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject })
      this.#schedule()
    })
  }

  /** Resolves once nothing waits for a commit or a sync. */
  flushed(): Promise<void> {
    return new Promise((resolve) => {
      this.#idle.push(resolve)
      this.#settleIdle()
    })
  }

  /**
   * Stops taking items; those waiting are still committed and synced. Resolves when every caller
   * has its answer (the connection may be closed after it), or at the deadline with 503s.
   */
  close(): Promise<void> {
    this.#closed = true
    if (this.#inFlight === undefined && this.#queue.length > 0) this.#flush()
    const done = this.flushed()
    // Real time, not the Clock: it bounds a disk sync that a stalled disk holds.
    const timer = setTimeout(() => this.#abandonSync(), this.#o.closeTimeoutMs ?? 5_000)
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
    const ms = this.#o.closeTimeoutMs ?? 5_000
    this.#log.error(
      { deliveries: group.length, waitedMs: ms },
      `shutting down with a sync of the ${this.#o.name} log still in flight (the disk is not answering): answering 503 to its deliveries (the sender will not retry; the next sweep recovers the changes)`,
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
    if (this.#o.busy?.() === true) {
      // Joining another writer's open transaction would make our commit depend on theirs.
      this.#scheduled = true
      setImmediate(() => this.#flush())
      return
    }
    const group = this.#queue
    this.#queue = []
    const items = group.map((w) => w.item)
    const started = performance.now()
    const walPath = this.#walPath
    let results: R[]
    try {
      results = this.#o.commit(items, walPath === undefined)
    } catch (err) {
      this.#log.error(
        { err, deliveries: group.length },
        `webhook deliveries could not be stored in the ${this.#o.name}: answering 503 (the sender will not retry; the next sweep recovers the changes)`,
      )
      const error = new InboxUnavailableError('INBOX_WRITE_FAILED', `the ${this.#o.name} could not be written: ${(err as Error).message}`, {
        cause: err,
      })
      for (const w of group) w.reject(error)
      return this.#settleIdle()
    }
    const committed = performance.now()
    const m = this.#o.metrics
    if (m) m.commitMicros += Math.round((committed - started) * 1000)
    this.#o.committed?.(items, results)
    if (walPath === undefined) return this.#durable(group, items, results)
    const fd = this.#openWal(walPath)
    if (fd === undefined) {
      const error = new InboxUnavailableError(
        'INBOX_WRITE_FAILED',
        `the ${this.#o.name} could not sync its log: its -wal file did not open`,
      )
      for (const w of group) w.reject(error)
      return this.#settleIdle()
    }
    this.#inFlight = group
    this.#syncFile(fd, (err) => {
      fs.close(fd, () => undefined)
      // close() gave up on this sync and answered its group already.
      if (this.#inFlight !== group) return
      this.#inFlight = undefined
      if (err !== null) {
        this.#log.error(
          { err, deliveries: group.length },
          `syncing the ${this.#o.name} log to disk failed: answering 503 to these and every later delivery until the daemon is restarted (the sender will not retry; the next sweep recovers the changes)`,
        )
        return this.#syncFailed(group, err)
      }
      if (m) m.walSyncMicros += Math.round((performance.now() - committed) * 1000)
      this.#durable(group, items, results)
      // What arrived during the sync is the next group, with whatever else completes in this poll phase.
      if (this.#queue.length > 0) this.#schedule()
    })
  }

  /** Answers a group whose commit is on disk. */
  #durable(group: readonly Waiting<I, R>[], items: readonly I[], results: readonly R[]): void {
    const m = this.#o.metrics
    if (m) {
      m.groupCommits++
      m.groupedDeliveries += group.length
    }
    this.#o.durable?.(items, results)
    group.forEach((w, i) => w.resolve(results[i]!))
    this.#settleIdle()
  }

  /**
   * A sync failed or never returned. The group's rows are committed; what is uncertain is whether
   * they survive a power loss, and a 2xx would promise that. So the group, those waiting and every
   * later item are answered 503.
   */
  #syncFailed(group: readonly Waiting<I, R>[], cause: Error): void {
    this.#broken = cause
    const error = new InboxUnavailableError('INBOX_WRITE_FAILED', `the ${this.#o.name} log could not be synced to disk: ${cause.message}`, {
      cause,
    })
    for (const w of [...group, ...this.#queue.splice(0)]) w.reject(error)
    this.#settleIdle()
  }

  /**
   * The -wal file as it is now, opened after the commit (which wrote it) and closed after its sync:
   * a mirror parked and opened again has a new -wal file, and a descriptor kept on the old one
   * would sync a deleted file (and hold a descriptor for every account that ever took a delivery).
   */
  #openWal(walPath: string): number | undefined {
    try {
      // Only ever synced. 'r+': flushing a file needs write access on some platforms (Windows); nothing is written.
      return fs.openSync(walPath, 'r+')
    } catch (err) {
      this.#log.error(
        { err },
        `the ${this.#o.name} cannot open its -wal file to sync it: answering 503 to these deliveries, and committing with synchronous=FULL from now on`,
      )
      this.#walPath = undefined
      return undefined
    }
  }

  #settleIdle(): void {
    if (this.#inFlight !== undefined || this.#queue.length > 0 || this.#scheduled) return
    for (const resolve of this.#idle.splice(0)) resolve()
  }
}
