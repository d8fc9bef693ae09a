// The daemon's accounts as a set (docs/accounts.md): one runtime per account; an account that cannot
// open or start is kept apart (failed, with its error, retried with back-off) while the others run;
// a new accounts list is applied while running (added start, removed stop, changed restart alone),
// one apply at a time. The process half (listener, checkpoint thread) stays in daemon.ts.
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { ACCOUNT_ID_PATTERN, DEFAULT_ACCOUNT_ID, diffAccounts, type AccountConfig, type AccountsDiff } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { systemClock, type Clock } from '../model/clock.js'
import type { CheckpointService } from '../store/sqlite/background-checkpoints.js'
import type { IntakeHandler } from '../webhooks/intake-handler.js'
import { openAccountRuntime, type AccountRuntime, type AccountRuntimeDeps, type AccountStatus } from './account-runtime.js'
import { PROBES_AT_ONCE, type AccountReadiness, type AccountState } from './account-readiness.js'
import { openMirrorCap } from './descriptor-budget.js'
import { defaultParking, FIRST_SWEEPS_AT_ONCE, MirrorParker, turns } from './mirror-parker.js'
import type { ParkingPolicy } from './mirror-parking.js'
import { MirrorSlots, slotMirror } from './mirror-slots.js'
import { retryDelayMs as backoffMs } from './sweep-planner.js'

/** An account's part of the daemon's status. */
export type AccountSetStatus =
  | (AccountStatus & { state: 'running' })
  | { id: string; state: Exclude<AccountState, 'running'>; error?: string; since: string; retryAt?: string }

/** A failed account is tried again as a failed sweep is (5 s, doubling), at most 5 min apart. */
export const RETRY_MAX_MS = 300_000
export const retryDelayMs = (failures: number): number => backoffMs(failures, RETRY_MAX_MS)

/** Accounts opened at once (each open reads and migrates a mirror). */
const OPEN_CONCURRENCY = 4

export interface AccountSetOptions {
  /** The process's logger: each account logs through a child carrying `account`. */
  logger: Logger
  clock?: Clock
  checkpoints: CheckpointService
  /** What else each account's runtime takes from the process (its share of the webhook body budget). */
  runtimeDeps?: () => Pick<AccountRuntimeDeps, 'bodyBudget' | 'destinationPool' | 'intakeJournal' | 'sharedMetrics'>
  /** When idle mirrors are parked; default: with more than one account, after IDLE_PARK_MS, within the descriptor budget. */
  parking?: (accounts: number) => ParkingPolicy
  /** Open mirrors at most, when idle mirrors are parked; default: openMirrorCap (descriptors and memory). */
  maxOpenMirrors?: number
}

interface Entry {
  id: string
  config: AccountConfig['config']
  state: AccountState
  since: number
  runtime: AccountRuntime | undefined
  error: string | undefined
  failures: number
  retryAt: number | undefined
  cancelRetry: (() => void) | undefined
  /** What its runtime takes beyond the process's (a replica's lease on it). */
  extra: Partial<AccountRuntimeDeps> | undefined
  /** Its runtime was started. */
  started?: boolean
  /** An adoption's open under way (adopt): what stops the account waits for it. */
  opening?: Promise<unknown>
}

export class AccountSet {
  /** The running accounts by id: a live view, accounts come and go in it. */
  readonly runtimes = new Map<string, AccountRuntime>()
  private readonly entries = new Map<string, Entry>()
  private readonly clock: Clock
  private chain: Promise<unknown> = Promise.resolve()
  private started = false
  private closed = false
  /** Runtimes stopped with their mirror left open (the disk not answering): stuck until it closes. */
  private readonly stuckOnes = new Set<AccountRuntime>()
  private readonly firstSweeps = turns(FIRST_SWEEPS_AT_ONCE)
  private readonly probes = turns(PROBES_AT_ONCE)
  private readonly adoptions = turns(OPEN_CONCURRENCY)
  readonly parker: MirrorParker
  /** The cap on open mirrors (none with one account: it keeps its mirror open). */
  readonly slots: MirrorSlots
  private readonly policy: (accounts: number) => ParkingPolicy

  constructor(private readonly options: AccountSetOptions) {
    this.clock = options.clock ?? systemClock
    this.policy = options.parking ?? defaultParking
    this.parker = new MirrorParker(
      () => this.runtimes,
      () => this.policy(this.runtimes.size),
      this.clock,
      options.logger,
    )
    this.slots = new MirrorSlots(() => {
      if (!this.parking()) return Number.POSITIVE_INFINITY
      // A mirror with a destination stays open (the destination reads it at every poll): the others get one slot at least.
      let pinned = 0
      for (const r of this.runtimes.values()) if (r.destination !== undefined) pinned++
      return Math.max(pinned + 1, options.maxOpenMirrors ?? openMirrorCap(this.entries.size))
    }, this.clock)
  }

  /**
   * Opens every account (nothing runs until start()). With `strict`, the first one that cannot open
   * fails the whole open, the ones opened are stopped (today's single account: the start fails).
   */
  async open(accounts: readonly AccountConfig[], strict = false): Promise<void> {
    // Mirrors opened are parked while the others open: not every mirror open at once.
    this.parker.start()
    for (const a of accounts) this.entries.set(a.id, this.entry(a))
    const failures = await this.openAll(
      accounts.map((a) => this.entries.get(a.id)!),
      !strict,
    )
    if (strict && failures.length > 0) {
      await this.stop()
      throw failures[0]
    }
  }

  /** Opens the entries a few at a time; the errors of those that failed (without `isolate`, it stops at the first). */
  private async openAll(entries: readonly Entry[], isolate: boolean): Promise<unknown[]> {
    const queue = [...entries]
    const failures: unknown[] = []
    const worker = async () => {
      for (let e = queue.shift(); e !== undefined && (isolate || failures.length === 0); e = queue.shift()) {
        const failed = await this.openOne(e, isolate)
        if (failed !== undefined) failures.push(failed)
        // An open is synchronous work chained by promises: without a turn of the event loop between
        // two, timers (lease heartbeats) and HTTP wait for all of them.
        await nextTurn()
      }
    }
    await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, entries.length) }, worker))
    return failures
  }

  /** Starts every open account; from now on an account that opens starts at once. */
  start(): void {
    this.started = true
    this.parker.start()
    const waiting = [...this.entries.values()]
    // One account now, the others each after a turn of the event loop (timers and HTTP run between).
    const next = (): void => {
      for (let e = waiting.shift(); e !== undefined; e = waiting.shift()) {
        if (this.closed || e.state !== 'running' || e.runtime === undefined) continue
        if (e.started !== true) this.startOne(e, e.runtime)
        if (waiting.length > 0) void nextTurn().then(next)
        return
      }
    }
    next()
  }

  /** The accounts list as last applied, in its order (failed accounts included). */
  list(): AccountConfig[] {
    return [...this.entries.values()].map((e) => ({ id: e.id, config: e.config }))
  }

  /**
   * Applies a new accounts list: removed accounts stop (their mirrors stay on disk), added ones
   * open and start, changed ones restart; the others are not touched. Applies run one at a time.
   */
  apply(next: readonly AccountConfig[] | (() => readonly AccountConfig[])): Promise<AccountsDiff> {
    return this.inTurn(() => this.applyNow(typeof next === 'function' ? next() : next))
  }

  /** Runs `fn` after every apply, add, remove and retry before it. */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn)
    this.chain = run.catch(() => undefined)
    return run
  }

  private async applyNow(next: readonly AccountConfig[]): Promise<AccountsDiff> {
    if (this.closed) return { added: [], removed: [], changed: [] }
    const diff = diffAccounts(this.list(), next)
    if (diff.added.length + diff.removed.length + diff.changed.length === 0) return diff
    this.options.logger.info(diff, 'applying a new accounts list')
    await Promise.all([...diff.removed, ...diff.changed].map((id) => this.retire(this.entries.get(id)!)))
    for (const id of diff.removed) this.entries.delete(id)
    // The new list's order, so that list() and the next diff follow the file.
    const kept = new Map(this.entries)
    this.entries.clear()
    for (const a of next) {
      const old = kept.get(a.id)
      this.entries.set(a.id, old !== undefined && !diff.changed.includes(a.id) ? old : { ...this.entry(a), extra: old?.extra })
    }
    await this.openAll(
      [...diff.added, ...diff.changed].map((id) => this.entries.get(id)!),
      true,
    )
    return diff
  }

  /**
   * Adds one account (Daemon.addAccount): refused for an id already in the set, an invalid id, or a
   * mirror that cannot open (then nothing of it is kept). Runs in turn with the applies.
   */
  add(a: AccountConfig): Promise<AccountRuntime> {
    return this.inTurn(async () => {
      if (!ACCOUNT_ID_PATTERN.test(a.id)) throw new Error(`account id ${JSON.stringify(a.id)} does not match ${ACCOUNT_ID_PATTERN}`)
      if (this.closed) throw new Error(`account ${a.id} not added: the daemon is stopping`)
      if (this.entries.has(a.id)) throw new Error(`account ${a.id} is already running`)
      const e = this.entry(a)
      this.entries.set(a.id, e)
      const failed = await this.openOne(e, false)
      if (failed !== undefined || e.runtime === undefined) {
        this.entries.delete(a.id)
        throw failed instanceof Error ? failed : new Error(`account ${a.id} not added: the daemon is stopping`)
      }
      this.log(e).info('account added')
      return e.runtime
    })
  }

  /**
   * Takes an account in for a replica that acquired its lease (docs/sharding.md): like add, but one
   * that cannot open is kept apart and retried as a listed account is; one already in the set (an
   * older lease) is stopped first, since a new lease means a new runtime. `extra` goes to the runtime.
   * Skipped when, at its turn, the lease is no longer `held` (handed over while opens queued).
   */
  adopt(a: AccountConfig, extra: Partial<AccountRuntimeDeps>, held: () => boolean = () => true): Promise<void> {
    let opened: Promise<unknown> = Promise.resolve()
    const queued = this.inTurn(async () => {
      if (this.closed || !held()) return
      const old = this.entries.get(a.id)
      if (old !== undefined) await this.retire(old)
      const e: Entry = { ...this.entry(a), extra }
      this.entries.set(a.id, e)
      this.setState(e, 'opening')
      // The open (a restore from the warehouse: mostly Postgres I/O) runs beside a few others, off
      // the chain; a later change of this account waits for it (retire).
      opened = e.opening = this.adoptions.run(async () => {
        if (!this.closed && held() && this.entries.get(a.id) === e) await this.openOne(e, true)
        await nextTurn()
      })
    })
    return queued.then(() => opened).then(() => undefined)
  }

  /** Stops an account and takes it out (its mirror stays on disk); false when there is none by that id. */
  remove(id: string): Promise<boolean> {
    return this.inTurn(async () => {
      const e = this.entries.get(id)
      if (e === undefined) return false
      await this.retire(e)
      this.entries.delete(id)
      return true
    })
  }

  /**
   * The intake of account `id`: its own while it runs; while it opens, restarts or is kept apart,
   * 503 (the sender retries); undefined when the set has no such account (the listener says 404).
   */
  webhookHandler(id: string): IntakeHandler | undefined {
    const e = this.entries.get(id)
    if (e === undefined) return undefined
    if (e.state === 'running' && e.runtime !== undefined) return e.runtime.webhookHandler
    return (_req, res) => {
      res
        .writeHead(503, { 'content-type': 'application/json', 'retry-after': '60', connection: 'close' })
        .end(JSON.stringify({ error: `account ${id} is not running (${e.state}): send again later` }))
    }
  }

  /** Each account's readiness: its own probe while it runs (`freshForMs`: AccountRuntime.ready), else its state and why. */
  async readiness(freshForMs?: number): Promise<Record<string, AccountReadiness>> {
    const answers = await Promise.all(
      [...this.entries.values()].map(async (e): Promise<[string, AccountReadiness]> => {
        if (e.state === 'running' && e.runtime !== undefined)
          return [e.id, { state: 'running', ...(await e.runtime.ready(freshForMs === undefined ? undefined : { freshForMs })) }]
        return [e.id, { state: e.state, ready: false, reason: this.why(e) }]
      }),
    )
    return Object.fromEntries(answers)
  }

  status(): Record<string, AccountSetStatus> {
    return Object.fromEntries(
      [...this.entries.values()].map((e): [string, AccountSetStatus] => [
        e.id,
        e.state === 'running' && e.runtime !== undefined
          ? { ...e.runtime.status(), state: 'running' }
          : {
              id: e.id,
              state: e.state as Exclude<AccountState, 'running'>,
              since: new Date(e.since).toISOString(),
              ...(e.error === undefined ? {} : { error: e.error }),
              ...(e.retryAt === undefined ? {} : { retryAt: new Date(e.retryAt).toISOString() }),
            },
      ]),
    )
  }

  /** No more applies or retries; the running accounts drain (their mirrors stay open). */
  async drain(): Promise<void> {
    this.closed = true
    this.parker.stop()
    this.slots.unbound()
    for (const e of this.entries.values()) this.cancelRetry(e)
    await this.chain
    await Promise.all([...this.entries.values()].map((e) => (e.opening ?? Promise.resolve()).catch(() => undefined)))
    await Promise.all([...this.runtimes.values()].map((r) => r.drain()))
  }

  async stop(): Promise<void> {
    await this.drain()
    await Promise.all([...this.runtimes.values()].map((r) => r.stop()))
  }

  /** After stop(): a sync of the disk never returned in one of the accounts. */
  stuck(): boolean {
    return [...this.stuckOnes, ...this.runtimes.values()].some((r) => r.stuck())
  }

  /** Idle mirrors are parked (more than one account, by default). */
  private parking(): boolean {
    return Number.isFinite(this.policy(this.entries.size).idleMs)
  }

  private entry(a: AccountConfig): Entry {
    return {
      id: a.id,
      config: a.config,
      state: 'opening',
      since: this.clock.now(),
      failures: 0,
      runtime: undefined,
      error: undefined,
      retryAt: undefined,
      cancelRetry: undefined,
      extra: undefined,
    }
  }

  /** Opens (and, once the set runs, starts) one account; a failure is kept on the entry (and returned). */
  private async openOne(e: Entry, isolate: boolean): Promise<unknown> {
    this.setState(e, 'opening')
    let runtime: AccountRuntime | undefined
    try {
      prepareFolder(e.id, e.config.db)
      // The open holds a slot: the mirror is migrated and read within the cap, and takes its slot from then on.
      runtime = await this.slots.hold(e.id, async () => {
        const opened = await openAccountRuntime(e.config, { ...this.deps(), mirrorSlot: this.slots.slot(e.id), ...e.extra, id: e.id })
        this.slots.add(e.id, slotMirror(opened))
        return opened
      })
    } catch (err) {
      if (!isolate) {
        this.setState(e, 'failed')
        e.error = (err as Error).message
        return err
      }
      this.fail(e, err)
      return err
    }
    if (this.closed || this.entries.get(e.id) !== e) {
      await runtime.stop()
      this.slots.remove(e.id)
      return undefined
    }
    e.runtime = runtime
    this.setState(e, 'running')
    this.runtimes.set(e.id, runtime)
    if (e.failures > 0) this.log(e).info({ failures: e.failures }, 'the account opened after its earlier failures: it runs again')
    e.failures = 0
    e.error = undefined
    if (this.started) this.startOne(e, runtime)
    return undefined
  }

  private startOne(e: Entry, runtime: AccountRuntime): void {
    e.started = true
    // The start reads the mirror (the inbox, the streams' state): in a slot, at once when one is free.
    void this.slots.hold(e.id, () => {
      try {
        if (this.closed || e.runtime !== runtime) return Promise.resolve()
        runtime.start()
        // What the start read opened it for: parked again until its turn or a delivery.
        if (this.parking()) void runtime.park()
      } catch (err) {
        this.runtimes.delete(e.id)
        e.runtime = undefined
        void runtime.stop().finally(() => {
          this.keepIfStuck(runtime)
          this.slots.remove(e.id)
        })
        this.fail(e, err)
      }
      return Promise.resolve()
    })
  }

  /** Marks the account failed, logs it once (the same error again is not logged again), retries later. */
  private fail(e: Entry, err: unknown): void {
    const message = (err as Error).message
    e.failures++
    const delay = retryDelayMs(e.failures)
    e.retryAt = this.clock.now() + delay
    if (message !== e.error)
      this.log(e).error(
        { err, retryInSeconds: delay / 1000 },
        'the account cannot open or start: it is kept apart and tried again later; the other accounts run on',
      )
    e.error = message
    this.setState(e, 'failed')
    if (this.closed) return
    e.cancelRetry = this.clock.setTimer(
      delay,
      () => {
        e.cancelRetry = undefined
        e.retryAt = undefined
        // Through the chain: a retry never runs beside an apply.
        this.chain = this.chain
          .then(() => (this.closed || this.entries.get(e.id) !== e ? undefined : this.openOne(e, true)))
          .catch((err: unknown) => this.log(e).error({ err }, 'trying the account again failed'))
      },
      { background: true },
    )
  }

  /** Stops a running account, or ends a failed one's retries. */
  private async retire(e: Entry): Promise<void> {
    await e.opening?.catch(() => undefined)
    this.cancelRetry(e)
    const runtime = e.runtime
    if (runtime === undefined) return
    this.setState(e, 'stopping')
    this.runtimes.delete(e.id)
    e.runtime = undefined
    await runtime.stop()
    this.keepIfStuck(runtime)
    this.slots.remove(e.id)
    this.log(e).info('the account stopped: its mirror stays on disk')
  }

  /** A runtime stopped with its mirror left open stays stuck until the mirror closes (runtime.stuck()). */
  private keepIfStuck(runtime: AccountRuntime): void {
    if (runtime.stuck()) this.stuckOnes.add(runtime)
  }

  private cancelRetry(e: Entry): void {
    e.cancelRetry?.()
    e.cancelRetry = undefined
    e.retryAt = undefined
  }

  private why(e: Entry): string {
    if (e.state === 'opening') return 'opening its mirror'
    if (e.state === 'stopping') return 'stopping'
    const retry = e.retryAt === undefined ? '' : `; next try at ${new Date(e.retryAt).toISOString()}`
    return `cannot open or start: ${e.error ?? 'unknown error'}${retry}`
  }

  private setState(e: Entry, state: AccountState): void {
    if (e.state !== state) e.since = this.clock.now()
    e.state = state
  }

  private log(e: Entry): Logger {
    return this.options.logger.child({ account: e.id })
  }

  private deps() {
    const { logger, checkpoints, runtimeDeps } = this.options
    const spreadSchedules = this.entries.size > 1
    return {
      logger,
      checkpoints,
      clock: this.clock,
      firstSweepTurns: this.firstSweeps,
      probeTurns: this.probes,
      spreadSchedules,
      ...runtimeDeps?.(),
    }
  }
}

/**
 * An account's folder (`<dataDir>/<id>/`, or its own `db`'s) is made readable by the process's user
 * alone; the default account's is left to the mirror's opening, as before.
 */
function prepareFolder(id: string, db: string): void {
  if (id === DEFAULT_ACCOUNT_ID) return
  const dir = path.dirname(path.resolve(db))
  if (existsSync(dir)) return
  mkdirSync(path.dirname(dir), { recursive: true })
  mkdirSync(dir, { mode: 0o700 })
}
