// The one thread behind background-checkpoints.ts: a connection of its own to each registered
// mirror, a PASSIVE checkpoint of each every `everyMs`, and counters the service reads without a
// message (a shared buffer per mirror). It posts only when a mirror cannot be opened (then drops
// it), when a pass fails with an error not yet reported for that mirror, and when a mirror is removed.
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { slotOf, type CheckpointCommand, type CheckpointWorkerData, type CheckpointWorkerMessage } from './checkpoint-protocol.js'

interface CheckpointResult {
  busy: number
  log: number
  checkpointed: number
}

interface Watched {
  id: number
  db: Database.Database
  checkpoint: Database.Statement<[], CheckpointResult>
  dataVersion: Database.Statement<[], number>
  counters: Float64Array
  /** When the next pass is due (performance.now()). */
  due: number
  backfilled: number
  /** data_version before the last pass, and whether that pass left the log fully copied. */
  version: number
  settled: boolean
  /** Checks in a row that found nothing new. */
  quiet: number
  lastError: string
}

const [PASSES, BUSY, ERRORS, LOG, COPIED, MICROS, IDLE] = [
  slotOf('passes'),
  slotOf('busy'),
  slotOf('errors'),
  slotOf('logFrames'),
  slotOf('copiedFrames'),
  slotOf('micros'),
  slotOf('idle'),
]

/** Spreads the first passes of mirrors added together over the interval (golden-ratio steps). */
const PHASE = 0.618_033_988_75
/** After this many checks in a row with nothing new, a mirror is looked at every IDLE_EVERY intervals. */
const QUIET_CHECKS = 10
const IDLE_EVERY = 10

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))

function open(file: string): Database.Database {
  const db = new Database(file, { fileMustExist: true })
  try {
    // For opening and reading the schema only: a PASSIVE checkpoint never calls the busy handler.
    db.pragma('busy_timeout = 2000')
    // Syncs as the writer's own checkpoint does: the log before copying, the database after.
    db.pragma('synchronous = NORMAL')
    // A checkpoint copies frames without the page cache; this connection reads almost nothing.
    db.pragma('cache_size = -64')
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') throw new Error('the mirror is not in WAL mode')
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

function run(port: NonNullable<typeof parentPort>, data: CheckpointWorkerData): void {
  const post = (m: CheckpointWorkerMessage) => port.postMessage(m)
  const watched = new Map<number, Watched>()
  let timer: NodeJS.Timeout | undefined
  let added = 0

  // An idle mirror costs one read of the wal-index header (data_version, no file I/O, ~10 µs): a
  // pass runs only when another connection committed since the last one, or that one left frames.
  const pass = (w: Watched) => {
    const started = performance.now()
    try {
      const version = w.dataVersion.get()!
      if (version === w.version && w.settled) {
        w.counters[IDLE]!++
        w.quiet++
      } else {
        w.quiet = 0
        const r = w.checkpoint.get()!
        w.version = version
        if (r.busy !== 0 || r.log < 0) {
          // The writer's backstop held the checkpoint lock: nothing was read, nothing to report.
          w.counters[BUSY]!++
          w.settled = false
        } else {
          w.counters[PASSES]!++
          // After a restart the log counts from zero again.
          w.counters[COPIED]! += r.checkpointed >= w.backfilled ? r.checkpointed - w.backfilled : r.checkpointed
          w.backfilled = r.checkpointed
          w.counters[LOG] = r.log
          // A reader's snapshot can keep frames from being copied: try again at the next pass.
          w.settled = r.checkpointed >= r.log
        }
      }
    } catch (err) {
      w.counters[ERRORS]!++
      w.settled = false
      const message = messageOf(err)
      if (message !== w.lastError) {
        w.lastError = message
        post({ kind: 'error', id: w.id, message })
      }
    }
    w.counters[MICROS]! += Math.round((performance.now() - started) * 1000)
    // The next pass a full interval after this one ended: a slow disk must not keep the checkpoint
    // lock taken back to back, or the writer's backstop could never run.
    // An idle mirror is looked at less often: its first commit after a quiet spell waits at most
    // IDLE_EVERY intervals for a pass (the writer's backstop bounds the log meanwhile).
    w.due = performance.now() + data.everyMs * (w.quiet >= QUIET_CHECKS ? IDLE_EVERY : 1)
  }

  // Runs every pass due now or within a tenth of the interval, so mirrors whose phases are close
  // share one wake-up; then sleeps until the next one is due.
  const tick = () => {
    timer = undefined
    for (const w of watched.values()) if (w.due <= performance.now() + data.everyMs / 10) pass(w)
    schedule()
  }
  const schedule = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    let next = Infinity
    for (const w of watched.values()) next = Math.min(next, w.due)
    if (next !== Infinity) timer = setTimeout(tick, Math.max(0, next - performance.now()))
  }

  const add = (id: number, file: string, counters: SharedArrayBuffer) => {
    let db: Database.Database
    try {
      db = open(file)
    } catch (err) {
      post({ kind: 'failed', id, message: messageOf(err) })
      return
    }
    const phase = ((added++ * PHASE) % 1) * data.everyMs
    watched.set(id, {
      id,
      db,
      checkpoint: db.prepare<[], CheckpointResult>('PRAGMA wal_checkpoint(PASSIVE)'),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
      counters: new Float64Array(counters),
      due: performance.now() + phase,
      backfilled: 0,
      version: -1,
      settled: false,
      quiet: 0,
      lastError: '',
    })
    schedule()
  }

  const remove = (id: number) => {
    const w = watched.get(id)
    watched.delete(id)
    try {
      w?.db.close()
    } finally {
      post({ kind: 'removed', id })
    }
    schedule()
  }

  port.on('message', (m: CheckpointCommand) => {
    if (m.kind === 'add') add(m.id, m.file, m.counters)
    else if (m.kind === 'remove') remove(m.id)
    else {
      if (timer !== undefined) clearTimeout(timer)
      for (const w of watched.values()) w.db.close()
      watched.clear()
      port.close()
    }
  })
}

// Started as a worker thread's entry only (background-checkpoints.ts): nothing to do elsewhere.
if (parentPort !== null) run(parentPort, workerData as CheckpointWorkerData)
