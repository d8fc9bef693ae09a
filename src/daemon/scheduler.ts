// The daemon's schedules (croner). Overlap protection is ours, not croner's `protect`, so that a
// skipped tick is logged and a running job can be awaited on shutdown: a job never runs twice at
// once, a tick that comes while it runs is noted and dropped (never queued), and a failed job is
// logged and waits for its next tick (no retry storm; the client already retries what may succeed).
// Croner only reads the pattern (`nextRun(from)`); the waiting is the injected Clock's, so the
// FakeClock of the tests drives schedules as it drives every other timer (docs/architecture.md, Time).
import { createHash } from 'node:crypto'
import { Cron } from 'croner'
import { SCHEDULE_OFF } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import { systemClock, type Clock } from '../model/clock.js'

export interface JobDefinition {
  name: string
  /** Cron expression (5 fields, or 6 with seconds first; checked with croner by the config), or "off": never scheduled. */
  cron: string
  run: (signal: AbortSignal) => Promise<void>
  /** Each tick runs this long after the pattern's time (spreadOffsetMs: accounts of one process apart); default 0. */
  offsetMs?: number
}

interface JobSlot {
  def: JobDefinition
  /** The parsed pattern (never started: croner arms no timer of its own); undefined when "off". */
  pattern: Cron | undefined
  /** The armed next run; null when the pattern has none; undefined before start and after stop. */
  next: Date | null | undefined
  /** Cancels the armed timer. */
  cancel: (() => void) | undefined
  running: Promise<void> | undefined
  skipped: number
}

/**
 * Longest single wait (ms). Node's timers run on a monotonic clock that stands still while the host
 * is suspended: one long timer armed at 22:00 for 03:00 fires at 05:00 after a two-hour suspend.
 * So a job waits in steps of at most this and looks at the wall clock (`clock.now()`) after each,
 * running as soon as its planned time has passed (as croner's own timers do).
 */
export const CHECK_EVERY_MS = 30_000

/** The most a spread job runs after its pattern's time. */
export const SPREAD_MAX_MS = 3_600_000

/**
 * A stable offset for the job of `key` (an account id) on `cron`: the key's hash spread over the
 * gap between two ticks of the pattern, at most SPREAD_MAX_MS, so that the accounts of one process
 * do not all run it in the same minute. 0 for "off" or a pattern with fewer than two runs.
 */
export function spreadOffsetMs(key: string, cron: string, now: number): number {
  if (cron === SCHEDULE_OFF) return 0
  const pattern = new Cron(cron, { paused: true })
  const first = pattern.nextRun(new Date(now))
  const second = first === null ? null : pattern.nextRun(first)
  if (first === null || second === null) return 0
  const spread = Math.min(SPREAD_MAX_MS, second.getTime() - first.getTime())
  const fraction = createHash('sha256').update(key).digest().readUInt32BE(0) / 2 ** 32
  // Whole seconds: the offset reads well in logs and `next`.
  return Math.floor((fraction * spread) / 1000) * 1000
}

export class Scheduler {
  readonly #logger: Logger
  readonly #clock: Clock
  readonly #jobs = new Map<string, JobSlot>()
  readonly #controller = new AbortController()
  #state: 'idle' | 'running' | 'stopped' = 'idle'

  constructor(jobs: readonly JobDefinition[], logger: Logger, clock: Clock = systemClock) {
    this.#logger = logger
    this.#clock = clock
    for (const def of jobs)
      this.#jobs.set(def.name, {
        def,
        pattern: def.cron === SCHEDULE_OFF ? undefined : new Cron(def.cron, { paused: true }),
        next: undefined,
        cancel: undefined,
        running: undefined,
        skipped: 0,
      })
  }

  /** True between `start()` and `stop()`. */
  get active(): boolean {
    return this.#state === 'running'
  }

  /** Aborted by `stop()`: every job's work sees it. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  start(): void {
    if (this.#state !== 'idle') return
    this.#state = 'running'
    for (const slot of this.#jobs.values()) this.#arm(slot, this.#clock.now())
  }

  /**
   * Arms the timer for the first run strictly after `from`. A tick arms the next from its own
   * planned time (or the clock's, when later), so a timer that fires a little early never runs a
   * job twice for one tick, and ticks missed while the process slept are not made up.
   */
  #arm(slot: JobSlot, from: number): void {
    if (slot.pattern === undefined || this.#state !== 'running') return
    // With an offset, the pattern's next tick after `from - offset`, run `offset` later: each tick once.
    const offset = slot.def.offsetMs ?? 0
    const tick = slot.pattern.nextRun(new Date(from - offset))
    const next = tick === null ? null : new Date(tick.getTime() + offset)
    slot.next = next
    if (next === null) return
    this.#wait(slot, next.getTime())
  }

  /** Waits for `at` by the wall clock, in steps of at most CHECK_EVERY_MS, then runs the job and arms the next. */
  #wait(slot: JobSlot, at: number): void {
    const wait = at - this.#clock.now()
    if (wait > 0) {
      slot.cancel = this.#clock.setTimer(Math.min(wait, CHECK_EVERY_MS), () => this.#wait(slot, at))
      return
    }
    slot.cancel = undefined
    this.#arm(slot, Math.max(at, this.#clock.now()))
    void this.runNow(slot.def.name)
  }

  /** Names of the jobs whose schedule is switched off ("off"): they never run on their own. */
  off(): string[] {
    return [...this.#jobs.values()].filter((s) => s.def.cron === SCHEDULE_OFF).map((s) => s.def.name)
  }

  /** Runs a job now unless it is already running. Resolves true when it ran, false when skipped. */
  async runNow(name: string): Promise<boolean> {
    const slot = this.#jobs.get(name)
    if (slot === undefined) throw new Error(`no scheduled job named ${name}`)
    if (this.#state === 'stopped' || this.#controller.signal.aborted) return false
    if (slot.running !== undefined) {
      slot.skipped++
      this.#logger.info({ job: name, skipped: slot.skipped }, 'scheduled job still running from an earlier tick: this tick is skipped')
      return false
    }
    const started = this.#clock.now()
    slot.running = slot.def
      .run(this.#controller.signal)
      .then(
        () => this.#logger.debug({ job: name, durationMs: this.#clock.now() - started }, 'scheduled job finished'),
        (err: unknown) => this.#logger.error({ err, job: name }, 'scheduled job failed; it runs again at its next tick'),
      )
      .finally(() => {
        slot.running = undefined
      })
    await slot.running
    return true
  }

  /** Names of the jobs running now. */
  busy(): string[] {
    return [...this.#jobs.values()].filter((s) => s.running !== undefined).map((s) => s.def.name)
  }

  /** Next run per job; "off" for a schedule switched off. */
  nextRuns(): Record<string, string | null> {
    return Object.fromEntries(
      [...this.#jobs.values()].map((s) => [s.def.name, s.def.cron === SCHEDULE_OFF ? SCHEDULE_OFF : (s.next?.toISOString() ?? null)]),
    )
  }

  /** Jobs switched on for which croner has no next run: they would never run on their own. */
  stalled(): string[] {
    return Object.entries(this.nextRuns()).flatMap(([name, next]) => (next === null ? [name] : []))
  }

  /** Stops every schedule, aborts the running jobs' signal and waits for them to end. */
  async stop(): Promise<void> {
    this.#state = 'stopped'
    for (const slot of this.#jobs.values()) {
      slot.cancel?.()
      slot.cancel = undefined
      slot.next = undefined
    }
    this.#controller.abort(new Error('the daemon is stopping'))
    await Promise.all([...this.#jobs.values()].flatMap((s) => (s.running === undefined ? [] : [s.running])))
  }
}
