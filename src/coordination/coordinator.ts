// One replica's side of the coordination (docs/sharding.md): each heartbeat renews its leases in
// one statement, records its request starts, computes the rendezvous assignment over the live
// replicas, hands over what is no longer its own and takes what is. Runtimes start and stop
// through the two callbacks; `validEpoch` is what a request or a commit checks before it acts.
import type { Clock } from '../model/clock.js'
import type { CoordinationTables, Queryable } from './coordination-schema.js'
import { acquireLeases, releaseLeases, renewLeases, type Lease } from './leases.js'
import { LocalLeases } from './local-leases.js'
import { deregister, heartbeat, liveReplicas, markStopping, registerReplica, type ReplicaIdentity } from './membership.js'
import { monotonicClock, type Monotonic } from './monotonic.js'
import { readPriorStarts, recordStarts, type PriorStarts, type StartsRecord } from './request-starts.js'
import { assign } from './rendezvous.js'

/** How long a lease lasts, and how long a replica counts as live after its last heartbeat. */
export const DEFAULT_LEASE_TTL_MS = 15_000

export type StopReason = 'lost' | 'expired' | 'handover' | 'shutdown' | 'displaced'

export interface CoordinatorOptions {
  /** Single statements only (a pg.Pool does): nothing here holds a transaction open. */
  db: Queryable
  tables: CoordinationTables
  me: ReplicaIdentity
  /** The accounts of the configuration, read at every heartbeat. */
  accounts: () => readonly string[]
  /** Start the account's runtime, fenced by `lease.epoch`; `prior` seeds its governor (seedStarts). */
  onAcquired: (lease: Lease, prior: PriorStarts | undefined) => Promise<void> | void
  /** Stop the account's runtime; resolve once it sends and commits nothing more. */
  onStop: (accountId: string, reason: StopReason) => Promise<void> | void
  /**
   * Each held account's request starts in the last window, as ages: recorded with each heartbeat,
   * and once more after a runtime stopped for a handover (so its governor must still answer then).
   * An account may be left out while it made no start since its last record (that record stays).
   */
  starts?: (held: readonly Lease[]) => StartsRecord[]
  ttlMs?: number
  /** Taken off the ttl locally: clock drift over one ttl, plus the time an action needs to land. */
  marginMs?: number
  heartbeatMs?: number
  windowMs?: number
  monotonic?: Monotonic
}

export interface TickResult {
  live: string[]
  acquired: Lease[]
  stopped: { accountId: string; reason: StopReason }[]
}

export class Coordinator {
  readonly #o: CoordinatorOptions
  readonly #ttlMs: number
  readonly #local: LocalLeases
  readonly #now: Monotonic
  #closing = false
  #cancelBeat: () => void = () => undefined
  #cancelExpiry: () => void = () => undefined
  #running: Promise<unknown> = Promise.resolve()
  /** Accounts whose runtime is stopping, to the end of that stop (and of the lease's release). */
  readonly #leaving = new Map<string, Promise<void>>()
  #failure: Error | undefined

  constructor(options: CoordinatorOptions) {
    this.#o = options
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS
    this.#local = new LocalLeases(this.#ttlMs, options.marginMs ?? Math.round(this.#ttlMs / 5))
    this.#now = options.monotonic ?? monotonicClock
  }

  get heartbeatMs(): number {
    return this.#o.heartbeatMs ?? Math.round(this.#ttlMs / 3)
  }

  /** The epoch to fence with while this replica may act on `accountId`; undefined when it may not. */
  validEpoch(accountId: string): number | undefined {
    return this.#local.validEpoch(accountId, this.#now())
  }

  owned(): string[] {
    return this.#local.accounts()
  }

  async register(): Promise<void> {
    await registerReplica(this.#o.db, this.#o.tables, this.#o.me)
  }

  /**
   * One heartbeat. Throws what Postgres throws; local expiry (expire()) still stops accounts meanwhile.
   * Runtimes stop in the background: a stop may wait behind mirrors still opening, and the renewal of
   * every other lease must not wait with it. An account stays out of `wanted` until its stop is done.
   */
  async tick(): Promise<TickResult> {
    const { db, tables: t, me } = this.#o
    if (this.#failure !== undefined) {
      const failure = this.#failure
      this.#failure = undefined
      throw failure
    }
    const stopped: TickResult['stopped'] = []
    const stop = (ids: readonly string[], reason: StopReason, then?: () => Promise<void>) => {
      if (ids.length === 0) return
      stopped.push(...ids.map((accountId) => ({ accountId, reason })))
      this.#track(ids, this.#stopAll(ids, reason).then(then))
    }
    // What ran out locally stops; if the server still has it as ours, a later beat takes it back.
    stop(this.#local.expired(this.#now()), 'expired')
    const sent = this.#now()
    if (!(await heartbeat(db, t, me))) {
      // Another process runs under this name: it owns what the name owned.
      await this.#stopAll(this.#local.accounts(), 'displaced')
      throw new Error(
        `replica ${me.name}: another process registered under this name; this one stops acting (give each replica its own name)`,
      )
    }
    stop(this.#local.renewed(sent, await renewLeases(db, t, me, this.#ttlMs)), 'lost')
    const held = this.#held()
    if (this.#o.starts !== undefined && held.length > 0) await recordStarts(db, t, me, this.#o.starts(held))

    const live = await liveReplicas(db, t, this.#ttlMs)
    if (!live.includes(me.name)) live.push(me.name)
    const owners = assign(this.#o.accounts(), live)
    const handover = held.filter((l) => owners.get(l.accountId) !== me.name)
    // Runtimes stopped first: the last record of their starts is complete, and the next owner may go at once.
    stop(
      handover.map((l) => l.accountId),
      'handover',
      () => this.#release(handover),
    )

    const wanted = [...owners]
      .filter(([a, r]) => r === me.name && !this.#leaving.has(a) && this.#local.validEpoch(a, this.#now()) === undefined)
      .map(([a]) => a)
    const acquired = await this.#acquire(wanted)
    return { live: live.sort(), acquired, stopped }
  }

  /** Resolves once every runtime the heartbeats stopped has stopped (and its handover is released). */
  async settled(): Promise<void> {
    while (this.#leaving.size > 0) await Promise.all(this.#leaving.values())
  }

  /** Stops the accounts whose lease has run out locally (the heartbeat failed or came too late). */
  async expire(): Promise<string[]> {
    const ids = this.#local.expired(this.#now())
    const work = this.#stopAll(ids, 'expired')
    this.#track(ids, work)
    await work
    return ids
  }

  /**
   * Heartbeats every heartbeatMs on `clock`. A separate timer stops each account at its local
   * expiry, so a heartbeat that hangs (a server that stopped answering) cannot keep one running.
   */
  start(clock: Clock, onError: (err: unknown) => void): void {
    const beat = () => {
      this.#running = this.tick()
        .catch(onError)
        .finally(() => {
          if (this.#closing) return
          armExpiry()
          this.#cancelBeat = clock.setTimer(this.heartbeatMs, beat, { background: true })
        })
    }
    const armExpiry = () => {
      this.#cancelExpiry()
      const next = this.#local.nextExpiry()
      if (next === undefined || this.#closing) return
      const fire = () => void this.expire().catch(onError).finally(armExpiry)
      this.#cancelExpiry = clock.setTimer(Math.max(0, next - this.#now()), fire, { background: true })
    }
    armExpiry()
    beat()
  }

  /**
   * A graceful stop: stops every runtime first (also when Postgres does not answer), then leaves the
   * assignment and hands every lease over at once. Throws the first Postgres error after that.
   */
  async stop(): Promise<void> {
    this.#closing = true
    this.#cancelBeat()
    this.#cancelExpiry()
    const held = this.#held()
    await this.#stopAll(this.#local.accounts(), 'shutdown')
    // A heartbeat in flight starts nothing more (#closing); what it acquired is released below.
    await this.#running
    await this.settled()
    const { db, tables: t, me } = this.#o
    let failure: Error | undefined
    const keep = (err: unknown) => {
      failure ??= err instanceof Error ? err : new Error(String(err))
    }
    await markStopping(db, t, me).catch(keep)
    if (this.#o.starts !== undefined && held.length > 0) await recordStarts(db, t, me, this.#o.starts(held), true).catch(keep)
    await releaseLeases(db, t, me).catch(keep)
    await deregister(db, t, me).catch(keep)
    if (failure !== undefined) throw failure
  }

  /** Forgets the leases first: from here on, validEpoch refuses them while their runtimes wind down. */
  async #stopAll(ids: readonly string[], reason: StopReason): Promise<void> {
    this.#local.drop(ids)
    await Promise.all(
      ids.map(async (a) => {
        await this.#o.onStop(a, reason)
      }),
    )
  }

  #held(): Lease[] {
    const now = this.#now()
    return this.#local.accounts().flatMap((accountId) => {
      const epoch = this.#local.validEpoch(accountId, now)
      return epoch === undefined ? [] : [{ accountId, epoch }]
    })
  }

  /** Records the stopped runtimes' last starts, then lets their leases go. */
  async #release(leases: readonly Lease[]): Promise<void> {
    const { db, tables: t, me } = this.#o
    if (this.#o.starts !== undefined) await recordStarts(db, t, me, this.#o.starts(leases), true)
    await releaseLeases(
      db,
      t,
      me,
      leases.map((l) => l.accountId),
    )
  }

  /** Keeps `ids` out of acquisition until `work` ends; its failure is thrown by the next tick. */
  #track(ids: readonly string[], work: Promise<void>): void {
    const done = work.catch((err: unknown) => {
      this.#failure ??= err instanceof Error ? err : new Error(String(err))
    })
    for (const id of ids) this.#leaving.set(id, done)
    void done.finally(() => {
      for (const id of ids) if (this.#leaving.get(id) === done) this.#leaving.delete(id)
    })
  }

  async #acquire(wanted: string[]): Promise<Lease[]> {
    if (wanted.length === 0 || this.#closing) return []
    const { db, tables: t, me } = this.#o
    const sent = this.#now()
    const got = await acquireLeases(db, t, me, wanted, this.#ttlMs)
    if (this.#closing) return []
    const fresh = this.#local.acquired(sent, got)
    if (fresh.length === 0) return []
    const prior = await readPriorStarts(
      db,
      t,
      fresh.map((l) => l.accountId),
      this.#o.windowMs ?? 60_000,
    )
    for (const l of fresh) await this.#o.onAcquired(l, prior.get(l.accountId))
    return fresh
  }
}
