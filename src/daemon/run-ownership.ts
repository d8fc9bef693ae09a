// This process as the owner of the runs it starts: registered once in run_owners, kept alive by a
// heartbeat (one UPDATE every `heartbeatMs`), removed when the app (create-app.ts) closes. At start
// it marks interrupted only the running runs whose owner is gone (see owner-liveness.ts), so a cron
// command beside a live daemon leaves the daemon's runs alone.
import { readlinkSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Logger } from '../log/logger.js'
import { systemClock, type Clock } from '../model/clock.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { ownerLiveness, STALE_AFTER_MS, type ProcessIdentity, type RunOwner } from '../store/repositories/owner-liveness.js'
import { RunOwnerStore } from '../store/repositories/run-owners.js'
import type { SyncStateStore } from '../store/repositories/sync-state.js'
import { isoNow } from '../model/timestamps.js'

/** How often a live process says so. */
export const HEARTBEAT_MS = 10_000
export { STALE_AFTER_MS }

export interface RunOwnershipOptions {
  heartbeatMs?: number
  staleAfterMs?: number
  /** The app's clock (create-app.ts): the heartbeat's times and its timer. */
  clock?: Clock
  identity?: ProcessIdentity
  pidExists?: (pid: number) => boolean
  /**
   * Runs a heartbeat only while the mirror is open (a parked mirror, src/store/README.md "Idle
   * mirrors", is not opened for it); undefined when it was not run. Default: always runs.
   */
  whenOpen?: (beat: () => void) => void
}

export interface AbandonedOwner {
  id: number | null
  pid?: number
  host?: string
  reason: string
}

export class RunOwnership {
  readonly id: number
  readonly #store: RunOwnerStore
  readonly #sqlite: Sqlite
  readonly #self: Omit<RunOwner, 'heartbeatAt'>
  readonly #clock: Clock
  readonly #staleAfterMs: number
  readonly #pidExists: (pid: number) => boolean
  #cancelBeat: (() => void) | undefined
  #beatFailed = false
  /** Writes the heartbeat now (after a parked mirror reopens, before its first run). */
  readonly beatNow: () => void

  constructor(sqlite: Sqlite, logger: Logger, options: RunOwnershipOptions = {}) {
    this.#sqlite = sqlite
    this.#store = new RunOwnerStore(sqlite)
    this.#clock = options.clock ?? systemClock
    this.#staleAfterMs = options.staleAfterMs ?? STALE_AFTER_MS
    this.#pidExists = options.pidExists ?? pidExists
    const identity = options.identity ?? currentProcess()
    const startedAt = isoNow(this.#clock.now())
    this.id = this.#store.register(identity, startedAt, startedAt)
    this.#self = { ...identity, id: this.id, startedAt }
    const everyMs = options.heartbeatMs ?? HEARTBEAT_MS
    // In the background: the heartbeat alone never keeps a one-shot command running.
    const arm = () => {
      this.#cancelBeat = this.#clock.setTimer(everyMs, beat, { background: true })
    }
    const whenOpen = options.whenOpen ?? ((fn: () => void) => fn())
    this.beatNow = () => {
      try {
        this.#store.beat(this.#self, isoNow(this.#clock.now()))
        this.#beatFailed = false
      } catch (err) {
        // Only matters to another host: after STALE_AFTER_MS of silence it may abandon our runs.
        if (!this.#beatFailed)
          logger.warn({ err }, "cannot refresh this process's heartbeat in the mirror; another host may take its runs for abandoned")
        this.#beatFailed = true
      }
    }
    // While parked no run of this process is running: a stale heartbeat then abandons nothing of
    // ours, and the reopen beats (and puts back a row pruned meanwhile) before the next run starts.
    const beat = () => {
      whenOpen(this.beatNow)
      arm()
    }
    arm()
  }

  /** Marks interrupted the running runs of owners that are gone; returns them with the reason. */
  abandonGone(state: SyncStateStore): { runs: number; owners: AbandonedOwner[] } {
    const now = this.#clock.now()
    const rules = { now, staleAfterMs: this.#staleAfterMs, pidExists: this.#pidExists }
    // The owners are read under the same write lock that marks runs interrupted: read before it, a
    // process that registers and starts a run in between would have its live run taken for one
    // with no owner.
    return this.#sqlite
      .transaction(() => {
        const owners = new Map(this.#store.all().map((o) => [o.id, o]))
        const gone: AbandonedOwner[] = []
        const runs = state.abandonRunning(isoNow(now), (id) => {
          const owner = id === null ? undefined : owners.get(id)
          const verdict = ownerLiveness(owner, this.#self, rules)
          if (!verdict.gone) return false
          gone.push({ id, ...(owner === undefined ? {} : { pid: owner.pid, host: owner.host }), reason: verdict.reason })
          return true
        })
        // Rows of gone owners (and of any owner whose runs all ended) are no longer needed.
        for (const o of owners.values()) {
          if (o.id !== this.id && ownerLiveness(o, this.#self, rules).gone) this.#store.prune(o.id)
        }
        return { runs, owners: gone }
      })
      .immediate()
  }

  /** Stops the heartbeat and removes this process's row: a run it left running is then abandoned at the next start. */
  close(): void {
    this.#cancelBeat?.()
    this.#cancelBeat = undefined
    try {
      this.#store.remove(this.id)
    } catch {
      // A mirror that cannot be written: the row goes stale and the next start abandons by heartbeat.
    }
  }
}

export function currentProcess(): ProcessIdentity {
  let pidNamespace = ''
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid')
  } catch {
    // Not Linux: the hostname alone tells hosts apart.
  }
  return { pid: process.pid, host: hostname(), pidNamespace }
}

/** `process.kill(pid, 0)` sends nothing; ESRCH means no such process (EPERM: one exists, not ours). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH'
  }
}
