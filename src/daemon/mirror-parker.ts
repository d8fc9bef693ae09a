// Parks the mirrors of idle accounts (mirror-parking.ts says which), every few seconds, and gives
// first sweeps their turns (a few accounts backfill at once). The shell around the pure rule: it
// reads each runtime's activity and asks the quiet ones to park. src/store/README.md, "Idle mirrors".
import { availableParallelism } from 'node:os'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { AccountRuntime, Turns } from './account-runtime.js'
import { openMirrorBudget } from './descriptor-budget.js'
import { mirrorsToPark, QuietTracker, type ParkingPolicy } from './mirror-parking.js'

/** How often the accounts are looked at. */
export const PARKING_LOOK_MS = 2_000
/**
 * A mirror unused this long is parked (the budget may park one sooner). Short: an idle account
 * sweeps one stream every several seconds, and a park or a reopen costs a fraction of a millisecond
 * on the event loop (the close that checkpoints runs on the checkpoint thread).
 */
export const IDLE_PARK_MS = 2_000
/**
 * Accounts in their first sweep at once. A first sweep spends most of its time waiting for its
 * share of the account's request budget (about 15 s for 200 rows), not on the CPU: with 8 at once
 * 1,000 accounts took half an hour to backfill; 32 a core keeps the memory high-water mark that of
 * a few tens of accounts, not of all.
 */
export const FIRST_SWEEPS_AT_ONCE = Math.max(16, 32 * availableParallelism())

/** One account keeps its mirror open; more are parked while idle, within the process's descriptors. */
export function defaultParking(accounts: number): ParkingPolicy {
  if (accounts <= 1) return { idleMs: Number.POSITIVE_INFINITY, maxOpen: Number.POSITIVE_INFINITY }
  return { idleMs: IDLE_PARK_MS, maxOpen: openMirrorBudget(accounts) }
}

export class MirrorParker {
  readonly #tracker = new QuietTracker()
  #cancel: (() => void) | undefined
  #looking = false
  parked = 0

  constructor(
    private readonly runtimes: () => ReadonlyMap<string, AccountRuntime>,
    private readonly policy: () => ParkingPolicy,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const arm = () => {
      this.#cancel = this.clock.setTimer(PARKING_LOOK_MS, () => void this.look().finally(arm), { background: true })
    }
    if (this.#cancel === undefined) arm()
  }

  stop(): void {
    this.#cancel?.()
    this.#cancel = () => undefined
  }

  /** One look: parks what the rule says (one look at a time). */
  async look(): Promise<void> {
    if (this.#looking) return
    this.#looking = true
    try {
      const now = this.clock.now()
      const runtimes = this.runtimes()
      this.#tracker.keep(new Set(runtimes.keys()))
      const states = [...runtimes].map(([id, r]) => this.#tracker.look(id, r.activity(), now))
      const parks: Promise<boolean>[] = []
      for (const id of mirrorsToPark(states, now, this.policy())) {
        const runtime = runtimes.get(id)
        if (runtime !== undefined) parks.push(runtime.park().catch(() => false))
      }
      this.parked += (await Promise.all(parks)).filter(Boolean).length
    } catch (err) {
      this.logger.warn({ err }, 'parking idle mirrors failed; tried again at the next look')
    } finally {
      this.#looking = false
    }
  }
}

/** Turns that never wait (a runtime outside a daemon's account set). */
export const NO_WAIT: Turns = { run: (work) => work() }

/** At most `n` works run at once, the others wait in order (first sweeps). */
export function turns(n: number): Turns {
  let running = 0
  const waiting: (() => void)[] = []
  return {
    async run<T>(work: () => Promise<T>): Promise<T> {
      if (running >= n) await new Promise<void>((resolve) => waiting.push(resolve))
      else running++
      try {
        return await work()
      } finally {
        const next = waiting.shift()
        if (next === undefined) running--
        else next()
      }
    },
  }
}
