// A Logger for the intake thread (intake-worker.ts) that writes nothing itself: each line goes to the
// main thread as a message and is written there by the process's logger, with its redaction and
// scrubbing of secrets, its level and its destination. Errors travel as name, message and code.
import type { Logger } from '../log/logger.js'
import type { LogLevel } from './intake-protocol.js'

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }

export type LogLine = { level: LogLevel; bindings: Record<string, unknown>; obj: Record<string, unknown>; msg: string | undefined }

export function forwardingLogger(send: (line: LogLine) => void, level: string, bindings: Record<string, unknown> = {}): Logger {
  const min = LEVELS[level] ?? LEVELS.info!
  const emit =
    (lvl: LogLevel) =>
    (a?: unknown, b?: string): void => {
      if (LEVELS[lvl]! < min) return
      const [obj, msg] = typeof a === 'string' ? [{}, a] : [(a ?? {}) as Record<string, unknown>, b]
      send({ level: lvl, bindings, obj: plain(obj), msg })
    }
  const logger = {
    level,
    child: (more: Record<string, unknown>) => forwardingLogger(send, level, { ...bindings, ...more }),
    isLevelEnabled: (l: string) => (LEVELS[l] ?? 0) >= min,
    trace: () => undefined,
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    fatal: emit('error'),
  }
  return logger as unknown as Logger
}

/** Values that cross a thread as they are, Errors as their name, message and code. */
function plain(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj))
    out[k] = v instanceof Error ? { name: v.name, message: v.message, code: (v as NodeJS.ErrnoException).code } : v
  return out
}

/** On the main thread: writes a forwarded line with `logger`. */
export function writeForwarded(logger: Logger, line: LogLine): void {
  const obj = { ...line.obj }
  const err = obj.err as { name?: string; message?: string; code?: string } | undefined
  if (err !== undefined && typeof err === 'object')
    obj.err = Object.assign(new Error(err.message ?? ''), {
      name: err.name ?? 'Error',
      ...(err.code === undefined ? {} : { code: err.code }),
    })
  logger.child(line.bindings)[line.level](obj, line.msg)
}
