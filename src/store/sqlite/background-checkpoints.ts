// WAL checkpoints off the event loop, for every mirror of the process on one worker thread
// (checkpoint-worker.ts): a checkpoint on the writer runs inside a commit on the event loop and
// held every webhook ack behind it (40-75 ms stalls at 1,000 deliveries/s). The thread runs PASSIVE
// checkpoints, which never take the writer lock nor wait, with synchronous=NORMAL like the writer's
// (same syncs, same durability). Each writer keeps a smaller automatic checkpoint as a backstop:
// only a checkpoint that completes between two commits restarts the log. Why, and what an idle
// mirror costs: src/store/README.md, "Checkpoints".
import type { Worker } from 'node:worker_threads'
import type { Logger } from '../../log/logger.js'
import { CHECKPOINT_COUNTERS as FIELDS, type CheckpointCommand, type CheckpointWorkerMessage } from './checkpoint-protocol.js'
import type { Sqlite } from './mirror-database.js'
import { startModuleWorker } from './module-worker.js'

export interface CheckpointServiceOptions {
  logger: Logger
  /** Time between two passes over one mirror (ms). Default 100. */
  everyMs?: number
  /** How long stop() waits for a pass in flight (ms). Default 3,000. */
  stopTimeoutMs?: number
}

export interface RegisterOptions {
  /** The writer's wal_autocheckpoint while the thread checkpoints it (frames). Default 4,000 (16 MiB). */
  backstopFrames?: number
  /** For this mirror's log lines (an account's logger); the service's by default. */
  logger?: Logger
}

export interface CheckpointStats {
  /** Passes that ran (found frames to copy, or none). */
  passes: number
  /** Passes skipped because another checkpoint (the writer's backstop) was running. */
  busy: number
  /** Passes that failed (logged once per distinct message). */
  errors: number
  /** Frames in the log after the last pass that ran. */
  logFrames: number
  /**
   * Frames copied into the database file, as SQLite counts them after each pass: this includes
   * what the writer's backstop copied between two passes.
   */
  copiedFrames: number
  /** Time spent on this mirror on the worker thread, µs. */
  micros: number
}

export interface MirrorCheckpointStats extends CheckpointStats {
  /** Passes skipped because nothing was committed since the last one, which copied everything. */
  idle: number
}

/** One mirror's checkpoints (a registration with the service). */
export interface BackgroundCheckpoints {
  readonly running: boolean
  /** stop() gave up waiting for a pass stuck on the disk, and the thread still holds the mirror. */
  readonly abandoned: boolean
  /** Resolves once the thread holds no connection to the mirror (after stop(); at once when it never did). */
  released(): Promise<void>
  stats(): MirrorCheckpointStats
  /** Stops checkpointing this mirror and gives its writer back its own automatic checkpoints. */
  stop(): Promise<void>
}

export interface CheckpointService {
  /** Mirrors the thread checkpoints now. */
  readonly mirrors: number
  /** stop() gave up waiting for the thread (a pass stuck on the disk). */
  readonly abandoned: boolean
  /** Checkpoints this writer's file on the service's thread (started with the first mirror). */
  register(sqlite: Sqlite, options?: RegisterOptions): BackgroundCheckpoints
  /** Ends the thread; every writer still registered gets its own automatic checkpoints back. */
  stop(): Promise<void>
}

interface Registration {
  log: Logger
  giveBack(why: string, err?: unknown): void
  removed?: () => void
}

export function startCheckpointService(options: CheckpointServiceOptions): CheckpointService {
  const serviceLog = options.logger.child({ component: 'checkpoints' })
  const everyMs = options.everyMs ?? 100
  const waitMs = options.stopTimeoutMs ?? 3_000
  const registered = new Map<number, Registration>()
  /** Removed, but the thread has not let go of them yet (their 'removed' answer is still awaited). */
  const lingering = new Map<number, Registration>()
  let worker: Worker | undefined
  let exited = Promise.resolve()
  let stopping = false
  let abandoned = false
  let stopped: Promise<void> | undefined
  let nextId = 0

  const send = (command: CheckpointCommand) => worker?.postMessage(command)
  const giveBackAll = (why: string, err?: unknown) => {
    for (const r of registered.values()) r.giveBack(why, err)
    registered.clear()
  }
  const thread = (): void => {
    if (worker !== undefined) return
    const w = startModuleWorker(new URL('./checkpoint-worker.js', import.meta.url), { workerData: { everyMs } })
    w.unref()
    w.on('message', (m: CheckpointWorkerMessage) => {
      const r = registered.get(m.id) ?? lingering.get(m.id)
      if (r === undefined) return
      if (m.kind === 'failed') {
        registered.delete(m.id)
        r.giveBack(`the worker could not open the mirror: ${m.message}`)
      } else if (m.kind === 'error') r.log.warn({ reason: m.message }, 'a background checkpoint failed; the next pass tries again')
      else r.removed?.()
    })
    w.on('error', (err) => giveBackAll('the worker failed', err))
    exited = new Promise<void>((resolve) =>
      w.once('exit', () => {
        // A later registration starts a new thread; the mirrors given back here stay with their writers.
        if (worker === w) worker = undefined
        giveBackAll('the worker exited')
        resolve()
      }),
    )
    worker = w
  }

  /** Waits for `done` at most stopTimeoutMs; true if it came in time. */
  const within = async (done: Promise<unknown>): Promise<boolean> => {
    let timer: NodeJS.Timeout | undefined
    const inTime = await Promise.race([
      done.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs))),
    ])
    clearTimeout(timer)
    return inTime
  }

  const register = (sqlite: Sqlite, opts: RegisterOptions = {}): BackgroundCheckpoints => {
    if (stopping) throw new Error('the checkpoint service is stopped')
    const log = opts.logger?.child({ component: 'checkpoints' }) ?? serviceLog
    const counters = new Float64Array(new SharedArrayBuffer(FIELDS.length * Float64Array.BYTES_PER_ELEMENT))
    const stats = () => Object.fromEntries(FIELDS.map((f, i) => [f, counters[i]!])) as unknown as MirrorCheckpointStats
    const walMode = sqlite.pragma('journal_mode', { simple: true }) === 'wal'
    if (!walMode || sqlite.memory || sqlite.name === '') {
      return { running: false, abandoned: false, released: () => Promise.resolve(), stats, stop: () => Promise.resolve() }
    }
    const id = nextId++
    const previous = sqlite.pragma('wal_autocheckpoint', { simple: true }) as number
    const backstop = opts.backstopFrames ?? 4_000
    let running = true
    let leaving = false
    let left = false
    let done: Promise<void> | undefined
    let letGo: Promise<void> = Promise.resolve()
    const registration: Registration = {
      log,
      giveBack: (why, err) => {
        if (!running) return
        running = false
        if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${previous}`)
        if (!stopping && !leaving)
          log.error(
            { err, file: sqlite.name },
            `background checkpoints stopped (${why}): the writer checkpoints on its own again, on the event loop`,
          )
      },
    }
    registered.set(id, registration)
    thread()
    send({ kind: 'add', id, file: sqlite.name, counters: counters.buffer })
    // Only once the thread is asked to run: until then the writer keeps its own setting.
    sqlite.pragma(`wal_autocheckpoint = ${Math.min(backstop, previous > 0 ? previous : backstop)}`)
    const leave = async (): Promise<void> => {
      leaving = true
      if (running && registered.has(id)) {
        const closed = new Promise<void>((resolve) => (registration.removed = resolve))
        send({ kind: 'remove', id })
        letGo = Promise.race([closed, exited]).then(() => {
          lingering.delete(id)
          left = false
        })
        // A pass stuck in a sync holds the thread: the writer gets its checkpoints back anyway, and
        // the registration lingers until the thread lets go (released()).
        if (!(await within(letGo))) {
          left = true
          lingering.set(id, registration)
          log.error(
            { waitedMs: waitMs, file: sqlite.name },
            'the checkpoint worker did not let go of the mirror in time (a pass is waiting on the disk)',
          )
        }
      }
      registered.delete(id)
      registration.giveBack('unregistered')
    }
    return {
      get running() {
        return running
      },
      get abandoned() {
        return left || abandoned
      },
      released: () => (done ?? Promise.resolve()).then(() => letGo),
      stats,
      stop: () => (done ??= leave()),
    }
  }

  const stop = async (): Promise<void> => {
    stopping = true
    const w = worker
    if (w === undefined) return
    // Unreferenced while it runs (it never keeps a process alive), but waited for here: without
    // a reference a caller's top-level await would see an empty event loop and exit (code 13).
    w.ref()
    send({ kind: 'stop' })
    // A pass stuck in a sync (a stalled disk) must not hold the daemon past its shutdown budget.
    // Closing the writers meanwhile is safe: the thread's connections still hold the logs. The
    // thread cannot be stopped while the kernel holds it, and a normal process exit waits for it:
    // `abandoned` tells the caller to end the process another way.
    if (!(await within(exited))) {
      abandoned = true
      giveBackAll('stopped late')
      serviceLog.error(
        { waitedMs: waitMs },
        'the checkpoint worker did not stop in time (a pass is waiting on the disk): leaving it behind',
      )
      w.unref()
      void w.terminate()
    }
  }

  return {
    get mirrors() {
      return registered.size
    },
    get abandoned() {
      return abandoned
    },
    register,
    stop: () => (stopped ??= stop()),
  }
}

export interface BackgroundCheckpointsOptions extends CheckpointServiceOptions, Omit<RegisterOptions, 'logger'> {
  /** The mirror's writer connection (its file is opened again by the worker). */
  sqlite: Sqlite
}

/** A service of its own with one mirror (the daemon with one account, the benches); stop() ends both. */
export function startBackgroundCheckpoints(options: BackgroundCheckpointsOptions): BackgroundCheckpoints {
  const service = startCheckpointService(options)
  const mirror = service.register(options.sqlite, options)
  return {
    get running() {
      return mirror.running
    },
    get abandoned() {
      return mirror.abandoned || service.abandoned
    },
    released: () => mirror.released(),
    stats: () => mirror.stats(),
    stop: () => service.stop(),
  }
}
