// The writing half of the intake journal (intake-journal.ts): the one connection that inserts
// verified deliveries, in group commits (group-commit.ts), and removes them once relayed. It runs
// on the intake thread when the daemon has one (intake-worker.ts), else beside the relay on the
// event loop. A delivery id the journal holds, or relayed within RELAYED_KEPT_MS, is a duplicate.
import type { Logger } from '../log/logger.js'
import { IntakeJournalStore, type JournalEntry } from '../store/repositories/intake-journal-store.js'
import { walFileOf } from '../store/sqlite/wal-file.js'
import { GroupCommit, type GroupCommitMetrics, type SyncFile } from './group-commit.js'
import type { Delivery, EnqueueResult } from './inbox.js'

/**
 * How long a relayed delivery id is still known here: past the upstream's last retry (the fifth
 * attempt, about 2 h 36 min after the first); the account's inbox keeps it longer.
 */
export const RELAYED_KEPT_MS = 3 * 3_600_000

/** What the journal's writes look like from the relay: in this thread or through the intake thread. */
export interface JournalWrites {
  enqueue(accountId: string, delivery: Delivery): Promise<EnqueueResult>
  /** Lets relayed rows go (their ids stay known as duplicates). */
  remove(accountId: string, seqs: readonly number[]): void
  /** Why nothing can be taken now (closed, or a sync failed), or undefined. */
  refusal(): Error | undefined
  /** The account's deliveries waiting for a commit (not yet told to onDurable). */
  queued(accountId?: string): number
  /** Resolves once every delivery acknowledged so far has been told to onDurable. */
  flushed(): Promise<void>
  close(): Promise<void>
}

/** Told after each durable group: new rows per account, and the newest seq on disk. */
export type OnDurable = (stored: ReadonlyMap<string, number>, lastSeq: number) => void

export interface JournalWriterOptions {
  file: string
  logger: Logger
  now: () => number
  syncFile?: SyncFile
  closeTimeoutMs?: number
  metrics?: GroupCommitMetrics
  onDurable: OnDurable
}

export class JournalWriter implements JournalWrites {
  readonly #store: IntakeJournalStore
  readonly #group: GroupCommit<JournalEntry, boolean>
  readonly #now: () => number
  /** Rows in the journal per account; queued: waiting for the next commit. */
  readonly #rows: Map<string, number>
  readonly #queued = new Map<string, number>()
  #committedSeq = 0

  constructor(o: JournalWriterOptions) {
    this.#now = o.now
    this.#store = new IntakeJournalStore(o.file)
    this.#rows = this.#store.counts()
    this.#group = new GroupCommit<JournalEntry, boolean>({
      name: 'intake journal',
      logger: o.logger.child({ component: 'intake-journal' }),
      commit: (group, full) => {
        for (const e of group) this.#queued.set(e.accountId, (this.#queued.get(e.accountId) ?? 1) - 1)
        return this.#store.insertGroup(group, full)
      },
      // The -wal beside SQLite's own name for the file (wal-file.ts).
      walPath: walFileOf(this.#store.sqlite),
      ...(o.syncFile === undefined ? {} : { syncFile: o.syncFile }),
      ...(o.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: o.closeTimeoutMs }),
      ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
      committed: () => (this.#committedSeq = this.#store.lastSeq()),
      durable: (group, inserted) => {
        const stored = new Map<string, number>()
        group.forEach((e, i) => {
          if (inserted[i] === true) stored.set(e.accountId, (stored.get(e.accountId) ?? 0) + 1)
        })
        for (const [id, n] of stored) this.#rows.set(id, (this.#rows.get(id) ?? 0) + n)
        o.onDurable(stored, this.#committedSeq)
      },
    })
  }

  /** Rows of the account in the journal, not yet relayed and let go. */
  rows(accountId: string): number {
    return this.#rows.get(accountId) ?? 0
  }

  queued(accountId?: string): number {
    return accountId === undefined ? this.#group.queued : (this.#queued.get(accountId) ?? 0)
  }

  refusal(): Error | undefined {
    return this.#group.refusal()
  }

  enqueue(accountId: string, delivery: Delivery): Promise<EnqueueResult> {
    const refused = this.#group.refusal()
    if (refused !== undefined) return Promise.reject(refused)
    this.#queued.set(accountId, (this.#queued.get(accountId) ?? 0) + 1)
    const receivedAt = new Date(this.#now()).toISOString()
    return this.#group.submit({ accountId, delivery, receivedAt }).then((inserted) => (inserted ? 'stored' : 'duplicate'))
  }

  remove(accountId: string, seqs: readonly number[]): void {
    const now = this.#now()
    this.#store.remove(seqs, new Date(now).toISOString(), new Date(now - RELAYED_KEPT_MS).toISOString())
    const left = Math.max(0, this.rows(accountId) - seqs.length)
    if (left === 0) this.#rows.delete(accountId)
    else this.#rows.set(accountId, left)
  }

  flushed(): Promise<void> {
    return this.#group.flushed()
  }

  async close(): Promise<void> {
    await this.#group.close()
    this.#store.close()
  }
}
