// One intake journal for every account of the process (docs/webhooks.md, One journal for every
// account). Each account's verified deliveries are appended through its writes (journal-writer.ts:
// one group commit and one fdatasync for all that arrive meanwhile, then the 200), on the intake
// thread when the daemon runs one (intake-thread.ts). This is the relay: it reads each account's
// deliveries on its own connection, moves them into the account's inbox in batches (which dedups on
// the delivery id and resolves once its own log is synced), and lets them go from the journal only
// after that: a crash in between relays them again, and the inbox keeps a delivery id once.
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { IntakeJournalStore } from '../store/repositories/intake-journal-store.js'
import { InboxUnavailableError, type GroupCommitMetrics, type SyncFile } from './group-commit.js'
import type { Delivery, EnqueueResult, WebhookInbox } from './inbox.js'
import { JournalWriter, type JournalWrites, type OnDurable } from './journal-writer.js'
import type { ActiveSecret } from './signature.js'

/**
 * Relays start at most this often (100 a second). Each costs its account an inbox commit, a sync and
 * an apply transaction whatever its size: spread over many accounts, a relay per delivery would cost
 * the event loop more than the acks. Accounts wait their turn in order, and what arrives meanwhile
 * joins their batch: over 10 busy accounts each is relayed every 100 ms, over 1,000 every 10 s.
 */
export const RELAY_EVERY_MS = 10

/**
 * Acks come first (as in the processor's pacing, pacing.ts): while the intake stores more than
 * BUSY_INTAKE_PER_SECOND deliveries a second, relays start at most every RELAY_EVERY_BUSY_MS. Each
 * relay costs the main thread a mirror's open, a commit, a sync and an apply, and on a small
 * machine that CPU is what the intake thread's acks wait for; the relays catch up after the burst.
 */
export const BUSY_INTAKE_PER_SECOND = 200
export const RELAY_EVERY_BUSY_MS = 40

/** Least time between two relays' starts at `now`, given when the intake was last busy. */
export function relayEvery(now: number, busyUntil: number, everyMs: number = RELAY_EVERY_MS): number {
  return now < busyUntil ? Math.max(everyMs, RELAY_EVERY_BUSY_MS) : everyMs
}

export interface IntakeJournalOptions {
  file: string
  logger: Logger
  clock: Clock
  syncFile?: SyncFile
  /** How long close() waits for a sync of the journal in flight (ms, default 5,000). */
  closeTimeoutMs?: number
  /** The journal's group commits (the process's, not an account's). */
  metrics?: GroupCommitMetrics
  /** Relays in flight at once: each ends in a sync of its inbox's log on libuv's pool, where the journal's own sync must find a thread. Default 2. */
  relayConcurrency?: number
  /** An account's deliveries wait at least this long before its relay (ms, default 0). */
  relayDelayMs?: number
  /** Least time between the starts of two relays (ms, default RELAY_EVERY_MS). */
  relayEveryMs?: number
  /** Deliveries moved by one relay at most (default 500). */
  relayBatch?: number
  /** Tests: runs after an account's inbox holds a relayed batch, before the journal lets it go. */
  afterInboxCommit?: (accountId: string) => Promise<void>
  /** Where the writes go (the intake thread, intake-thread.ts); default a JournalWriter on this thread. */
  writes?: (onDurable: OnDurable) => JournalWrites & AccountIntakes
}

/** What the intake thread needs of each account it takes deliveries for. */
export interface AccountIntakeSpec {
  maxBacklog: number
  maxBodyBytes: number
  /** The secrets accepted now (read by the main thread, pushed on change). */
  secrets: () => readonly ActiveSecret[]
  /** The account's inbox backlog now (pushed on change). */
  backlog: () => number
}

/** Writes that take deliveries for accounts themselves (the intake thread) are told which. */
export interface AccountIntakes {
  attach?(accountId: string, spec: AccountIntakeSpec): void
  /** Resolves once the account's deliveries are no longer taken, and those taken are told to onDurable. */
  detach?(accountId: string): Promise<void>
}

/** What an account's intake handler enqueues into (its `inbox` option). */
export interface JournalIntake {
  enqueue(delivery: Delivery): Promise<EnqueueResult>
  /** Deliveries of the account in the journal, not yet in its inbox. */
  readonly waiting: number
  /** Resolves once every delivery of the account acknowledged so far is in its inbox (or the account closed). */
  relayed(): Promise<void>
  /** Stops taking deliveries (503), then relays what the journal holds for the account into its inbox. */
  close(): Promise<void>
}

interface Target {
  inbox: WebhookInbox
  maxBacklog: number
  closed: boolean
  relaying: Promise<unknown> | undefined
  relayedWaiters: (() => void)[]
}

export class IntakeJournal {
  /** This thread's connection: the relay reads here; writes go through #writes. */
  readonly #store: IntakeJournalStore
  readonly #o: IntakeJournalOptions
  readonly #log: Logger
  readonly #writes: JournalWrites & AccountIntakes
  readonly #targets = new Map<string, Target>()
  /** Committed and not yet removed, per account. */
  readonly #waiting = new Map<string, number>()
  /** Per account: the newest seq handed to its inbox (rows after it are read by its next relay). */
  readonly #relayedSeq = new Map<string, number>()
  #closed = false
  readonly #due = new Set<string>()
  #ready: string[] = []
  #nextStartAt = 0
  #cancelPump: (() => void) | undefined
  #relaying = 0
  /** Rows up to this seq are on disk: a relay takes no row whose sync has not returned (its count is not in #waiting yet). */
  #durableSeq: number
  /** Deliveries stored in the second that began at #secondAt; the intake is busy until #busyUntil. */
  #storedInSecond = 0
  #secondAt = Number.NEGATIVE_INFINITY
  #busyUntil = Number.NEGATIVE_INFINITY

  constructor(options: IntakeJournalOptions) {
    this.#o = options
    this.#log = options.logger.child({ component: 'intake-journal' })
    this.#store = new IntakeJournalStore(options.file)
    for (const [id, n] of this.#store.counts()) this.#waiting.set(id, n)
    this.#durableSeq = this.#store.lastSeq()
    const onDurable: OnDurable = (stored, lastSeq) => this.#durable(stored, lastSeq)
    this.#writes =
      options.writes?.(onDurable) ??
      new JournalWriter({
        file: options.file,
        logger: options.logger,
        now: () => options.clock.now(),
        onDurable,
        ...(options.syncFile === undefined ? {} : { syncFile: options.syncFile }),
        ...(options.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: options.closeTimeoutMs }),
        ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      })
  }

  /** The journal's connection (the process's checkpoint thread checkpoints it). */
  get sqlite() {
    return this.#store.sqlite
  }

  /** Deliveries in the journal or waiting for its next commit, every account. */
  get size(): number {
    let n = this.#writes.queued()
    for (const w of this.#waiting.values()) n += w
    return n
  }

  /**
   * The account's intake through the journal; what an earlier process left for it is relayed now.
   * `intake`: what the intake thread needs to take the account's deliveries itself.
   */
  attach(accountId: string, inbox: WebhookInbox, maxBacklog: number, intake?: Omit<AccountIntakeSpec, 'maxBacklog'>): JournalIntake {
    const target: Target = { inbox, maxBacklog, closed: false, relaying: undefined, relayedWaiters: [] }
    this.#targets.set(accountId, target)
    this.#relayedSeq.delete(accountId)
    if (intake !== undefined) this.#writes.attach?.(accountId, { ...intake, maxBacklog })
    if ((this.#waiting.get(accountId) ?? 0) > 0) this.#relaySoon(accountId, 0)
    const waiting = () => (this.#waiting.get(accountId) ?? 0) + this.#writes.queued(accountId)
    return {
      enqueue: (delivery) => this.#enqueue(accountId, target, delivery, waiting()),
      get waiting() {
        return waiting()
      },
      relayed: async () => {
        // Every delivery acknowledged so far (on the intake thread too) is counted first.
        await this.#writes.flushed()
        await new Promise<void>((resolve) => {
          target.relayedWaiters.push(resolve)
          this.#checkRelayed(accountId, target)
        })
      },
      close: async () => {
        target.closed = true
        await (this.#writes.detach?.(accountId) ?? this.#writes.flushed())
        await target.relaying
        // What stays (the inbox refused it) is relayed when the account attaches again.
        try {
          while ((this.#waiting.get(accountId) ?? 0) > 0 && (await this.#relay(accountId, target)) > 0);
        } catch (err) {
          this.#log.warn({ err, account: accountId }, 'webhook deliveries stay in the intake journal until the account starts again')
        }
        if (this.#targets.get(accountId) === target) this.#targets.delete(accountId)
        for (const resolve of target.relayedWaiters.splice(0)) resolve()
      },
    }
  }

  /** After every account closed its intake: commits what waits, then closes the file. */
  async close(): Promise<void> {
    this.#closed = true
    this.#cancelPump?.()
    await Promise.all([...this.#targets.values()].map((t) => t.relaying ?? Promise.resolve()))
    await this.#writes.close()
    this.#store.close()
  }

  #enqueue(accountId: string, target: Target, delivery: Delivery, waiting: number): Promise<EnqueueResult> {
    if (target.closed || this.#closed)
      return Promise.reject(new InboxUnavailableError('INBOX_CLOSED', 'the webhook inbox is closed (the account is stopping)'))
    const refused = this.#writes.refusal()
    if (refused !== undefined) return Promise.reject(refused)
    const backlog = target.inbox.backlog + waiting
    if (backlog >= target.maxBacklog)
      return Promise.reject(
        new InboxUnavailableError(
          'INBOX_BACKLOG_FULL',
          `the webhook inbox holds ${backlog} unapplied deliveries, at the bound webhooks.maxBacklog=${target.maxBacklog}: the processor is behind or stopped`,
        ),
      )
    return this.#writes.enqueue(accountId, delivery)
  }

  /** A group's sync returned: its rows may be relayed from now on. */
  #durable(stored: ReadonlyMap<string, number>, lastSeq: number): void {
    this.#durableSeq = Math.max(this.#durableSeq, lastSeq)
    const now = this.#o.clock.now()
    if (now - this.#secondAt >= 1_000) {
      this.#secondAt = now
      this.#storedInSecond = 0
    }
    for (const n of stored.values()) this.#storedInSecond += n
    if (this.#storedInSecond > BUSY_INTAKE_PER_SECOND) this.#busyUntil = now + 1_000
    for (const [id, n] of stored) {
      this.#waiting.set(id, (this.#waiting.get(id) ?? 0) + n)
      this.#relaySoon(id, this.#o.relayDelayMs ?? 0)
    }
    for (const [id, t] of this.#targets) if (t.relayedWaiters.length > 0) this.#checkRelayed(id, t)
  }

  #checkRelayed(accountId: string, target: Target): void {
    if (target.relayedWaiters.length === 0 || target.relaying !== undefined || this.#due.has(accountId)) return
    if ((this.#waiting.get(accountId) ?? 0) + this.#writes.queued(accountId) > 0 && !target.closed) return
    for (const resolve of target.relayedWaiters.splice(0)) resolve()
  }

  #relaySoon(accountId: string, delayMs: number): void {
    if (this.#due.has(accountId)) return
    this.#due.add(accountId)
    const ready = () => {
      this.#ready.push(accountId)
      this.#pump()
    }
    if (delayMs <= 0) ready()
    else this.#o.clock.setTimer(delayMs, ready, { background: true })
  }

  #pump(): void {
    while (this.#relaying < (this.#o.relayConcurrency ?? 2) && this.#ready.length > 0) {
      const now = this.#o.clock.now()
      if (now < this.#nextStartAt) {
        this.#cancelPump ??= this.#o.clock.setTimer(
          this.#nextStartAt - now,
          () => {
            this.#cancelPump = undefined
            this.#pump()
          },
          { background: true },
        )
        return
      }
      this.#nextStartAt = now + relayEvery(now, this.#busyUntil, this.#o.relayEveryMs)
      const id = this.#ready.shift()!
      this.#due.delete(id)
      const target = this.#targets.get(id)
      // An account not running here keeps its deliveries in the journal until it attaches.
      if (target === undefined || target.closed || target.relaying !== undefined) continue
      this.#relaying++
      target.relaying = this.#relay(id, target)
        .catch((err: unknown) => {
          this.#log.warn({ err, account: id }, 'relaying webhook deliveries into the account inbox failed; trying again in 1 s')
          this.#relaySoon(id, 1_000)
        })
        .finally(() => {
          target.relaying = undefined
          this.#relaying--
          // Deliveries stored while this relay ran (their own call found it busy).
          if ((this.#waiting.get(id) ?? 0) > 0 && !target.closed) this.#relaySoon(id, 0)
          this.#checkRelayed(id, target)
          this.#pump()
        })
    }
  }

  /** Moves a batch of the account's deliveries into its inbox; removes them once the inbox's log is synced. */
  async #relay(accountId: string, target: Target): Promise<number> {
    const after = this.#relayedSeq.get(accountId) ?? 0
    const rows = this.#store.pending(accountId, after, this.#durableSeq, this.#o.relayBatch ?? 500)
    if (rows.length === 0) {
      // The file is the authority: nothing of the account's is left to relay.
      this.#waiting.delete(accountId)
      return 0
    }
    await Promise.all(rows.map((r) => target.inbox.enqueue(r.delivery, r.receivedAt)))
    await this.#o.afterInboxCommit?.(accountId)
    this.#relayedSeq.set(accountId, rows.at(-1)!.seq)
    this.#writes.remove(
      accountId,
      rows.map((r) => r.seq),
    )
    const left = Math.max(0, (this.#waiting.get(accountId) ?? 0) - rows.length)
    if (left === 0) this.#waiting.delete(accountId)
    else this.#waiting.set(accountId, left)
    return rows.length
  }
}
