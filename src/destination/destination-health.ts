// What a destination shows of itself: its state, counts, the last error, a wait Postgres keeps a
// statement in, a view it cannot build. Each is logged once and recorded in the mirror's consumer
// row (change_log_consumers), so `status` reads every destination from the mirror alone.
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { lastChangeSeq, nextChangeAt, type ChangeLogConsumers, type DestinationTarget } from '../store/repositories/change-log-consumers.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { parseInstant } from '../model/timestamps.js'
import type { DestinationStatus } from './destination-options.js'
import type { DestinationError } from './postgres-errors.js'

interface Shown {
  message: string
  at: string
}

export class DestinationHealth {
  state: DestinationStatus['state'] = 'starting'
  readonly counts = { rowsReplicated: 0, changesApplied: 0, errors: 0, loads: 0, timesNulled: 0 }
  lastError: Shown | undefined
  /** What Postgres keeps the statement in flight waiting for, while it does (postgres-session.ts, watched). */
  #waiting: Shown | undefined
  /** The last wait reported, which the error of a statement that gave up waiting names. */
  #lastWait: string | undefined
  /** Why a custom object's view could not be built, until a rebuild succeeds (the data goes on). */
  #viewError: Shown | undefined

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly consumers: ChangeLogConsumers,
    private readonly consumerName: string,
    private readonly where: DestinationTarget,
  ) {}

  /** The destination's status: its cursor against the mirror's last change, and what shown() gives. */
  status(mirror: Sqlite, cursor: number | null): DestinationStatus {
    const last = lastChangeSeq(mirror)
    const behind = cursor === null ? last : Math.max(0, last - cursor)
    let lagSeconds = 0
    if (behind > 0) {
      const next = nextChangeAt(mirror, cursor ?? 0)
      if (next !== undefined) lagSeconds = Math.max(0, (this.clock.now() - parseInstant(next)) / 1000)
    }
    const { state, lastError, lastErrorAt, ...counts } = this.shown()
    return { state, cursor, lagChanges: behind, lagSeconds, lastError, lastErrorAt, ...counts }
  }

  /** The state, error and counts `status()` shows. */
  shown(): Pick<DestinationStatus, 'state' | 'lastError' | 'lastErrorAt'> & DestinationHealth['counts'] {
    const shown = this.lastError ?? this.#waiting ?? this.#viewError
    return {
      state: this.#waiting !== undefined && this.state !== 'error' && this.state !== 'stopped' ? 'waiting' : this.state,
      lastError: shown?.message ?? null,
      lastErrorAt: shown?.at ?? null,
      ...this.counts,
    }
  }

  /** The wait reported before the failure, once (the next error does not name it again). */
  takeLastWait(): string | undefined {
    const wait = this.#lastWait
    this.#lastWait = undefined
    return wait
  }

  recordError(e: DestinationError, options: { oneShot: boolean }): void {
    this.counts.errors++
    this.state = 'error'
    const at = this.#now()
    if (this.lastError?.message !== e.message && !options.oneShot) {
      this.log.error({ kind: e.kind }, `Postgres destination: ${e.message}`)
    } else {
      this.log.debug({ kind: e.kind, err: e.message }, 'Postgres destination failed')
    }
    this.lastError = { message: e.message, at }
    this.#record('cannot record the destination error in the mirror', () => {
      // A destination never loaded holds nothing back: the daemon's gets a row only so that `status` shows why.
      if (options.oneShot) this.consumers.recordError(this.consumerName, e.message, at)
      else this.consumers.destinationError(this.consumerName, this.where, e.message, at)
    })
  }

  /** A wait Postgres reports (watched), or its end (undefined). */
  onWait(description: string | undefined, first: boolean): void {
    if (description === undefined) {
      this.#waiting = undefined
      return
    }
    const at = this.#now()
    this.#lastWait = description
    const waiting = { message: `Postgres destination ${description}`, at }
    this.#waiting = waiting
    if (first) this.log.warn({ kind: 'wait' }, waiting.message)
    else this.log.debug({ kind: 'wait' }, waiting.message)
    this.#record('cannot record the destination wait in the mirror', () =>
      this.consumers.recordError(this.consumerName, waiting.message, at),
    )
  }

  /** A watched operation starts: no wait reported yet. */
  clearLastWait(): void {
    this.#lastWait = undefined
  }

  /** The outcome of a views build: the failures Postgres gave, none when every view was built. Returns whether all were. */
  viewsBuilt(failures: readonly string[]): boolean {
    if (failures.length === 0) {
      if (this.#viewError !== undefined) this.log.info('the views are built again')
      this.#viewError = undefined
      return true
    }
    const message = `cannot build the replica's views, the data goes on (drop or change what depends on them): ${failures.join('; ')}`
    const at = this.#now()
    if (this.#viewError?.message !== message) this.log.error({ kind: 'views' }, `Postgres destination: ${message}`)
    this.#viewError = { message, at }
    this.#record('cannot record the destination error in the mirror', () => this.consumers.recordError(this.consumerName, message, at))
    return false
  }

  /** The ack clears the row's last error: a view still not built stays shown (`fsm-sync status`). */
  recordViewErrorAgain(): void {
    const v = this.#viewError
    if (v !== undefined) this.consumers.recordError(this.consumerName, v.message, v.at)
  }

  #now(): string {
    return new Date(this.clock.now()).toISOString()
  }

  #record(failed: string, write: () => void): void {
    try {
      write()
    } catch (err) {
      this.log.debug({ err }, failed)
    }
  }
}
