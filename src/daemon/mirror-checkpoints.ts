// An account's registration with the process's checkpoint thread, across the parks and reopens of
// its mirror (docs/accounts.md, Memory and file descriptors): a park ends the registration, the
// next use registers again, and the counters add up over every registration of the mirror.
import type { Logger } from '../log/logger.js'
import type { BackgroundCheckpoints, CheckpointService } from '../store/sqlite/background-checkpoints.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'

/** The counters summed over registrations; the others are the current registration's. */
const COUNTED = ['passes', 'busy', 'errors', 'copiedFrames', 'micros', 'idle'] as const

const NONE = { passes: 0, busy: 0, errors: 0, logFrames: 0, copiedFrames: 0, micros: 0, idle: 0 }

export class MirrorCheckpoints {
  /** Not registered yet: nothing runs, nothing is counted. */
  #current: BackgroundCheckpoints = {
    running: false,
    abandoned: false,
    released: () => Promise.resolve(),
    stats: () => NONE,
    stop: () => Promise.resolve(),
  }
  readonly #before = { ...NONE }

  constructor(
    private readonly service: CheckpointService,
    private readonly sqlite: Sqlite,
    private readonly logger: Logger,
  ) {}

  get running(): boolean {
    return this.#current.running
  }

  get abandoned(): boolean {
    return this.#current.abandoned
  }

  /** Registers the open mirror, unless it is registered already. */
  register(): void {
    if (!this.#current.running) this.#current = this.service.register(this.sqlite, { logger: this.logger })
  }

  /** Ends the registration (the thread lets go of the mirror); a register meanwhile stays. */
  async unregister(): Promise<void> {
    const ending = this.#current
    await ending.stop()
    const last = ending.stats()
    for (const k of COUNTED) this.#before[k] += last[k]
    if (this.#current !== ending) return
    this.#current = { ...ending, stats: () => ({ ...last, ...Object.fromEntries(COUNTED.map((k) => [k, 0])) }) }
    Object.defineProperty(this.#current, 'abandoned', { get: () => ending.abandoned })
  }

  /** Whether the thread has looked at the mirror since its registration (then it holds the mirror). */
  lookedAt(): boolean {
    const s = this.#current.stats()
    return s.passes + s.idle + s.busy + s.errors > 0
  }

  /** The counters over every registration of the mirror. */
  stats(): ReturnType<BackgroundCheckpoints['stats']> {
    const now = this.#current.stats()
    return { ...now, ...Object.fromEntries(COUNTED.map((k) => [k, this.#before[k] + now[k]])) }
  }

  stop(): Promise<void> {
    return this.#current.stop()
  }

  released(): Promise<void> {
    return this.#current.released()
  }

  /** The current registration seen through this one's summed counters (AccountRuntime.checkpoints). */
  view(): BackgroundCheckpoints {
    const current = this.#current
    return {
      get running() {
        return current.running
      },
      get abandoned() {
        return current.abandoned
      },
      released: () => current.released(),
      stop: () => current.stop(),
      stats: () => this.stats(),
    }
  }
}
