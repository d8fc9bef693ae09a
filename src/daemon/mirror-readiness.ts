// The mirror's part of an account's /readyz: a probe (mirror-probe.ts) taken in the mirror's slot,
// never opening a parked mirror whose last probe was good. With many accounts, /readyz waits for
// no mirror: it takes the last answer and refreshes a stale one in the background, a few accounts
// at a time (docs/accounts.md, Readiness).
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import type { MirrorParking } from '../store/sqlite/parkable-connection.js'
import type { ReadyAnswer } from './http-server.js'
import { NO_WAIT } from './mirror-parker.js'
import { MIRROR_OPENED, probeMirror, type ProbeResult } from './mirror-probe.js'
import type { Scheduler } from './scheduler.js'

export interface MirrorReadinessOptions {
  sqlite: Sqlite
  /** Room the mirror and its disk must have left (one delivery at the intake's cap). */
  minRoomBytes: number
  parking: MirrorParking | undefined
  /** The hold of the mirror's slot (mirror-slots.ts). */
  hold: <T>(work: () => Promise<T>) => Promise<T>
  clock: Clock
  logger: Logger
  /** Turns for background refreshes, shared by the process's accounts; default: no wait. */
  turns?: { run<T>(work: () => Promise<T>): Promise<T> }
}

export class MirrorReadiness {
  #last: ProbeResult | undefined
  #at = Number.NEGATIVE_INFINITY
  #refreshing: Promise<unknown> | undefined
  #stopped = false
  /** Probes in flight write to the mirror: the account's stop waits for them before it closes it. */
  readonly inFlight = new Set<Promise<unknown>>()

  constructor(private readonly o: MirrorReadinessOptions) {}

  /** Probes now (in the mirror's slot), unless the mirror is parked and its last answer was good. */
  async now(): Promise<ProbeResult> {
    const parking = this.o.parking
    if (parking?.parked === true && this.#last?.ok === true) return this.#last
    this.#last = await this.o.hold(() => {
      if (parking?.parked === true) parking.unpark()
      return probeMirror(this.o.sqlite, this.o.minRoomBytes)
    })
    this.#at = this.o.clock.now()
    return this.#last
  }

  /** The last answer (before any probe: what the open proved); one older than `freshForMs` is refreshed meanwhile. */
  cached(freshForMs: number): ProbeResult {
    // A parked mirror is opened for no probe: its open proved its migrations, and its next use its writes.
    const parked = this.o.parking?.parked === true && this.#last?.ok !== false
    if (!parked && this.o.clock.now() - this.#at >= freshForMs && this.#refreshing === undefined && !this.#stopped) {
      const r = (this.o.turns ?? NO_WAIT)
        .run(() => (this.#stopped ? Promise.resolve(undefined) : this.now()))
        .catch((err: unknown) => this.o.logger.warn({ err }, 'probing the mirror for /readyz failed'))
        .finally(() => {
          this.#refreshing = undefined
          this.inFlight.delete(r)
        })
      this.#refreshing = r
      this.inFlight.add(r)
    }
    return this.#last ?? MIRROR_OPENED
  }

  /** No refresh starts from now on (the account stops). */
  stop(): void {
    this.#stopped = true
  }
}

/** What a running account's /readyz says, from its mirror's probe and the state of its applies and schedules. */
export function runningAnswer(
  mirror: ProbeResult,
  s: {
    fault: { since: string; error: string; retryInMs: number } | undefined
    scheduler: Pick<Scheduler, 'active' | 'stalled' | 'busy' | 'off'>
    sweepFailure: string | undefined
    nextRuns: () => Record<string, string | null>
  },
): ReadyAnswer {
  if (!mirror.ok) return { ready: false, reason: mirror.reason }
  if (s.fault !== undefined)
    return {
      ready: false,
      reason: `applying webhook deliveries fails since ${s.fault.since} (${s.fault.error}); next try in ${Math.round(s.fault.retryInMs / 1000)} s`,
    }
  if (!s.scheduler.active) return { ready: false, reason: 'schedules are not running' }
  if (s.sweepFailure !== undefined) return { ready: false, reason: `continuous sweeping stopped: ${s.sweepFailure}; restart the daemon` }
  const stalled = s.scheduler.stalled()
  if (stalled.length > 0)
    return {
      ready: false,
      reason: `no next run for the schedule of ${stalled.join(', ')}: nothing would sync; fix schedules.* and restart`,
      next: s.nextRuns(),
    }
  return { ready: true, migrations: mirror.migrations, running: s.scheduler.busy(), next: s.nextRuns(), off: s.scheduler.off() }
}
