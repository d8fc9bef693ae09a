// What the daemon and its checkpoint thread (checkpoint-worker.ts) share: the data the thread starts
// with, the counters' slots in the shared buffer, and the messages each way. Kept apart from the
// worker module, whose import starts a checkpoint loop.

export interface CheckpointWorkerData {
  /** The mirror's file, opened again by the thread (it must exist and be in WAL mode). */
  file: string
  /** Time between passes (ms). */
  everyMs: number
  /** One Float64 slot per name in CHECKPOINT_COUNTERS, in that order. */
  counters: SharedArrayBuffer
}

/** The shared counters' slots, by index (the fields of CheckpointStats). */
export const CHECKPOINT_COUNTERS = ['passes', 'busy', 'errors', 'logFrames', 'copiedFrames', 'micros'] as const

export type CheckpointCounter = (typeof CHECKPOINT_COUNTERS)[number]

/** The slot of `name` in the shared counters. */
export const slotOf = (name: CheckpointCounter): number => CHECKPOINT_COUNTERS.indexOf(name)

/** The only message the daemon sends: close the connection and end the thread. */
export const STOP_CHECKPOINTS = 'stop'

/** What the thread posts: nothing while passes succeed. */
export type CheckpointWorkerMessage =
  /** The mirror could not be opened: the thread exits. */
  | { kind: 'failed'; message: string }
  /** A pass failed (each distinct message once): the next pass tries again. */
  | { kind: 'error'; message: string }
