// The daemon's schedules (croner). Overlap protection is ours, not croner's `protect`, so that a
// skipped tick is logged and a running job can be awaited on shutdown: a job never runs twice at
// once, a tick that comes while it runs is noted and dropped (never queued), and a failed job is
// logged and waits for its next tick (no retry storm; the client already retries what may succeed).
import { Cron } from 'croner'
import { SCHEDULE_OFF } from '../config/index.js'
import type { Logger } from '../log/logger.js'

export interface JobDefinition {
  name: string
  /** Cron expression (5 fields, or 6 with seconds first; checked with croner by the config), or "off": never scheduled. */
  cron: string
  run: (signal: AbortSignal) => Promise<void>
}

interface JobSlot {
  def: JobDefinition
  cron: Cron | undefined
  running: Promise<void> | undefined
  skipped: number
}

export class Scheduler {
  readonly #logger: Logger
  readonly #jobs = new Map<string, JobSlot>()
  readonly #controller = new AbortController()
  #state: 'idle' | 'running' | 'stopped' = 'idle'

  constructor(jobs: readonly JobDefinition[], logger: Logger) {
    this.#logger = logger
    for (const def of jobs) this.#jobs.set(def.name, { def, cron: undefined, running: undefined, skipped: 0 })
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
    for (const slot of this.#jobs.values()) {
      if (slot.def.cron === SCHEDULE_OFF) continue
      slot.cron = new Cron(slot.def.cron, { name: `fsm-sync:${slot.def.name}` }, () => {
        void this.runNow(slot.def.name)
      })
    }
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
    const started = Date.now()
    slot.running = slot.def
      .run(this.#controller.signal)
      .then(
        () => this.#logger.debug({ job: name, durationMs: Date.now() - started }, 'scheduled job finished'),
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
      [...this.#jobs.values()].map((s) => [
        s.def.name,
        s.def.cron === SCHEDULE_OFF ? SCHEDULE_OFF : (s.cron?.nextRun()?.toISOString() ?? null),
      ]),
    )
  }

  /** Jobs switched on for which croner has no next run: they would never run on their own. */
  stalled(): string[] {
    return Object.entries(this.nextRuns()).flatMap(([name, next]) => (next === null ? [name] : []))
  }

  /** Stops every schedule, aborts the running jobs' signal and waits for them to end. */
  async stop(): Promise<void> {
    this.#state = 'stopped'
    for (const slot of this.#jobs.values()) slot.cron?.stop()
    this.#controller.abort(new Error('the daemon is stopping'))
    await Promise.all([...this.#jobs.values()].flatMap((s) => (s.running === undefined ? [] : [s.running])))
  }
}
