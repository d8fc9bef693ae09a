// What the checkpoint service (background-checkpoints.ts) and its one thread (checkpoint-worker.ts)
// share: the data the thread starts with, each mirror's counters in a shared buffer, and the
// messages each way. Kept apart from the worker module, whose import starts a checkpoint loop.

export interface CheckpointWorkerData {
  /** Time between two passes over one mirror (ms). */
  everyMs: number
}

/** The shared counters' slots, by index (the fields of MirrorCheckpointStats). */
export const CHECKPOINT_COUNTERS = ['passes', 'busy', 'errors', 'logFrames', 'copiedFrames', 'micros', 'idle'] as const

export type CheckpointCounter = (typeof CHECKPOINT_COUNTERS)[number]

/** The slot of `name` in the shared counters. */
export const slotOf = (name: CheckpointCounter): number => CHECKPOINT_COUNTERS.indexOf(name)

/** What the service sends. */
export type CheckpointCommand =
  /** Checkpoint this file from now on (it must exist and be in WAL mode); `counters` has one Float64 per CHECKPOINT_COUNTERS. */
  | { kind: 'add'; id: number; file: string; counters: SharedArrayBuffer }
  /** Close this mirror's connection; the thread answers `removed`. */
  | { kind: 'remove'; id: number }
  /** Close every connection and end the thread. */
  | { kind: 'stop' }

/** What the thread posts: nothing while passes succeed. */
export type CheckpointWorkerMessage =
  /** The mirror could not be opened: the thread drops it and goes on with the others. */
  | { kind: 'failed'; id: number; message: string }
  /** A pass over this mirror failed (each distinct message once): its next pass tries again. */
  | { kind: 'error'; id: number; message: string }
  /** The mirror's connection is closed (the answer to `remove`). */
  | { kind: 'removed'; id: number }
