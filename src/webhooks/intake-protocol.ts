// The messages between the daemon's main thread (intake-thread.ts) and its intake thread
// (intake-worker.ts). Requests that want an answer carry `req`, echoed in the answer.
import type { IntakeLimits } from './intake-limits.js'
import type { ActiveSecret } from './signature.js'
import type { Delivery, EnqueueResult } from './inbox.js'
import type { GroupCommitMetrics } from './group-commit.js'

export interface IntakeWorkerData {
  file: string
  webhookPath: string
  defaultAccount: string
  host: string
  port: number
  limits: IntakeLimits
  /** The main logger's level: lines below it are not sent. */
  logLevel: string
  closeTimeoutMs?: number
}

export type ToWorker =
  /** `main`: main's own listener on loopback, where every request the thread does not answer itself goes. */
  | { t: 'listen'; main: { host: string; port: number } }
  | { t: 'attach'; id: string; maxBacklog: number; maxBodyBytes: number; secrets: readonly ActiveSecret[]; backlog: number }
  | { t: 'detach'; req: number; id: string }
  | { t: 'secrets'; id: string; secrets: readonly ActiveSecret[] }
  | { t: 'backlog'; id: string; n: number }
  | { t: 'enqueue'; req: number; id: string; delivery: Delivery }
  | { t: 'remove'; id: string; seqs: readonly number[] }
  | { t: 'flush'; req: number }
  | { t: 'refreshed'; req: number; secrets: readonly ActiveSecret[] }
  | { t: 'close-listener'; req: number }
  | { t: 'close'; req: number }

export type FromWorker =
  | { t: 'listening'; address: string; family: string; port: number }
  | { t: 'listen-failed'; message: string }
  | { t: 'durable'; stored: [string, number][]; lastSeq: number }
  | { t: 'refresh'; req: number; id: string }
  | { t: 'done'; req: number; result?: EnqueueResult; error?: { code: string; message: string } }
  | { t: 'metrics'; accounts: [string, Record<string, number>][]; journal: GroupCommitMetrics; dropped: number }
  | { t: 'log'; level: LogLevel; bindings: Record<string, unknown>; obj: Record<string, unknown>; msg: string | undefined }

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
