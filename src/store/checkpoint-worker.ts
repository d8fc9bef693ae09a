// The thread behind background-checkpoints.ts: its own connection to the mirror file, a PASSIVE
// checkpoint every `everyMs`, and counters the daemon reads without a message (a shared buffer).
// It posts a message only when it cannot open the mirror (then exits) or when a pass fails with an
// error it has not reported yet.
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { STOP_CHECKPOINTS, slotOf, type CheckpointWorkerData, type CheckpointWorkerMessage } from './checkpoint-protocol.js'

interface CheckpointResult {
  busy: number
  log: number
  checkpointed: number
}

const [PASSES, BUSY, ERRORS, LOG, COPIED, MICROS] = [
  slotOf('passes'),
  slotOf('busy'),
  slotOf('errors'),
  slotOf('logFrames'),
  slotOf('copiedFrames'),
  slotOf('micros'),
]

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))

function run(port: NonNullable<typeof parentPort>, data: CheckpointWorkerData): void {
  const post = (m: CheckpointWorkerMessage) => port.postMessage(m)
  const counters = new Float64Array(data.counters)
  let db: Database.Database
  try {
    db = new Database(data.file, { fileMustExist: true })
    // For opening and reading the schema only: a PASSIVE checkpoint never calls the busy handler.
    db.pragma('busy_timeout = 2000')
    db.pragma('synchronous = NORMAL')
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') throw new Error('the mirror is not in WAL mode')
  } catch (err) {
    post({ kind: 'failed', message: messageOf(err) })
    process.exit(1)
  }
  const checkpoint = db.prepare<[], CheckpointResult>('PRAGMA wal_checkpoint(PASSIVE)')
  let backfilled = 0
  let lastError = ''
  let timer: NodeJS.Timeout
  const pass = () => {
    const started = performance.now()
    try {
      const r = checkpoint.get()!
      if (r.busy !== 0 || r.log < 0) {
        // The writer's backstop held the checkpoint lock: nothing was read, nothing to report.
        counters[BUSY]!++
      } else {
        counters[PASSES]!++
        // After a restart the log counts from zero again.
        counters[COPIED]! += r.checkpointed >= backfilled ? r.checkpointed - backfilled : r.checkpointed
        backfilled = r.checkpointed
        counters[LOG] = r.log
      }
    } catch (err) {
      counters[ERRORS]!++
      const message = messageOf(err)
      if (message !== lastError) {
        lastError = message
        post({ kind: 'error', message })
      }
    }
    counters[MICROS]! += Math.round((performance.now() - started) * 1000)
    // The next pass a full interval after this one ended: a slow disk must not keep the checkpoint
    // lock taken back to back, or the writer's backstop could never run.
    timer = setTimeout(pass, data.everyMs)
  }
  timer = setTimeout(pass, data.everyMs)
  port.on('message', (m: unknown) => {
    if (m !== STOP_CHECKPOINTS) return
    clearTimeout(timer)
    db.close()
    port.close()
  })
}

// Started as a worker thread's entry only (background-checkpoints.ts): nothing to do elsewhere.
if (parentPort !== null) run(parentPort, workerData as CheckpointWorkerData)
