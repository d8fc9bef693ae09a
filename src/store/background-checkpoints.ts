// WAL checkpoints off the event loop (docs/webhooks.md). A checkpoint copies the log's pages
// into the database file and syncs both; on the writer connection it runs inside whichever commit
// crosses wal_autocheckpoint, on the event loop. With webhooks arriving, that commit is an inbox
// group or a processor slice, and every request parsed, verified or acked in the meantime waits:
// measured at a steady 1,000 deliveries/s, 40-75 ms stalls several times a second, which set the
// ack latency's p99 (72 ms against a goal of 10).
//
// So the daemon runs PASSIVE checkpoints on a worker thread (checkpoint-worker.ts) with its own
// connection, every `everyMs`. PASSIVE never takes the writer lock and never waits: the writer
// commits on while the worker copies and syncs, and a pass that meets another checkpointer just
// skips. The worker's
// connection has synchronous=NORMAL like the writer's, so SQLite syncs the log before copying and
// the database after, exactly as an automatic checkpoint does; durability is unchanged.
//
// Why the writer keeps a (smaller) automatic checkpoint: the log restarts from its start only when
// a write begins after a checkpoint that copied every frame. Under steady writes the worker's pass
// almost never ends between two commits, so the log would grow without bound. At `backstopFrames`
// the writer's own checkpoint copies what the worker has not yet copied (a fraction of a second of
// writes), completes, and the next commit restarts the log. If the worker cannot run, the writer's
// previous setting comes back and the mirror checkpoints as it did before.
import type { Logger } from '../log/logger.js'
import {
  CHECKPOINT_COUNTERS as FIELDS,
  STOP_CHECKPOINTS,
  type CheckpointWorkerData,
  type CheckpointWorkerMessage,
} from './checkpoint-protocol.js'
import type { Sqlite } from './mirror-database.js'
import { startModuleWorker } from './module-worker.js'

export interface BackgroundCheckpointsOptions {
  /** The mirror's writer connection (its file is opened again by the worker). */
  sqlite: Sqlite
  logger: Logger
  /** Time between passes (ms). Default 100. */
  everyMs?: number
  /** The writer's wal_autocheckpoint while the worker runs (frames). Default 4,000 (16 MiB). */
  backstopFrames?: number
  /** How long stop() waits for a pass in flight (ms). Default 3,000. */
  stopTimeoutMs?: number
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
  /** Time spent in passes, µs (on the worker thread). */
  micros: number
}

export interface BackgroundCheckpoints {
  readonly running: boolean
  /** stop() gave up waiting for a pass stuck on the disk: its thread may outlive a normal exit. */
  readonly abandoned: boolean
  stats(): CheckpointStats
  /** Stops the worker and gives the writer back its own automatic checkpoints. */
  stop(): Promise<void>
}

export function startBackgroundCheckpoints(options: BackgroundCheckpointsOptions): BackgroundCheckpoints {
  const { sqlite } = options
  const log = options.logger.child({ component: 'checkpoints' })
  const previous = sqlite.pragma('wal_autocheckpoint', { simple: true }) as number
  const counters = new Float64Array(new SharedArrayBuffer(FIELDS.length * Float64Array.BYTES_PER_ELEMENT))
  const stats = (): CheckpointStats => Object.fromEntries(FIELDS.map((f, i) => [f, counters[i]!])) as unknown as CheckpointStats
  const walMode = sqlite.pragma('journal_mode', { simple: true }) === 'wal'
  if (!walMode || sqlite.memory || sqlite.name === '') {
    return { running: false, abandoned: false, stats, stop: () => Promise.resolve() }
  }
  const backstop = options.backstopFrames ?? 4_000
  let running = true
  let stopping = false
  let abandoned = false
  let stopped: Promise<void> | undefined
  const giveBack = (why: string, err?: unknown) => {
    if (!running) return
    running = false
    if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${previous}`)
    if (!stopping) log.error({ err }, `background checkpoints stopped (${why}): the writer checkpoints on its own again, on the event loop`)
  }
  const workerData: CheckpointWorkerData = { file: sqlite.name, everyMs: options.everyMs ?? 100, counters: counters.buffer }
  const worker = startModuleWorker(new URL('./checkpoint-worker.js', import.meta.url), { workerData })
  worker.unref()
  worker.on('message', (m: CheckpointWorkerMessage) => {
    if (m.kind === 'failed') giveBack(`the worker could not open the mirror: ${m.message}`)
    else log.warn({ reason: m.message }, 'a background checkpoint failed; the next pass tries again')
  })
  worker.on('error', (err) => giveBack('the worker failed', err))
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      giveBack('the worker exited')
      resolve()
    }),
  )
  // Only once the worker is asked to run: until then the writer keeps its own setting.
  sqlite.pragma(`wal_autocheckpoint = ${Math.min(backstop, previous > 0 ? previous : backstop)}`)
  const stop = async (): Promise<void> => {
    stopping = true
    // Unreferenced while it runs (it never keeps a process alive), but waited for here: without
    // a reference a caller's top-level await would see an empty event loop and exit (code 13).
    worker.ref()
    worker.postMessage(STOP_CHECKPOINTS)
    // A pass stuck in a sync (a stalled disk) must not hold the daemon past its shutdown budget.
    // Closing the writer meanwhile is safe: the worker's connection still holds the log. The
    // thread itself cannot be stopped while the kernel holds it, and a normal process exit waits
    // for it: `abandoned` tells the caller to end the process another way.
    const waitMs = options.stopTimeoutMs ?? 3_000
    let timer: NodeJS.Timeout | undefined
    const late = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
    ])
    clearTimeout(timer)
    if (late) {
      abandoned = true
      giveBack('stopped late')
      log.error({ waitedMs: waitMs }, 'the checkpoint worker did not stop in time (a pass is waiting on the disk): leaving it behind')
      worker.unref()
      void worker.terminate()
    }
  }
  return {
    get running() {
      return running
    },
    get abandoned() {
      return abandoned
    },
    stats,
    stop: () => (stopped ??= stop()),
  }
}
