// The --out folder of an export. One export writes into it at a time: a lock file, created with
// O_EXCL (never through a link), names the process holding it; one left by a process that is gone
// (killed) is taken over, and the work folders (`.export-*`) such a process left are removed. File
// errors name the file or folder and say what to do.
import { randomUUID } from 'node:crypto'
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import path from 'node:path'

export const LOCK_FILE = '.export.lock'
/** The prefix of the folder each export writes its files in before moving them into place. */
export const WORK_PREFIX = '.export-'

/** A file or folder the export could not create, write or move (exit 1: the command line was fine). */
export class ExportFileError extends Error {}

/** Another export is writing into the folder. */
export class ExportBusyError extends Error {}

const FIXES: Readonly<Record<string, (file: string) => string>> = {
  ENOSPC: (f) => `no space left on the device holding ${path.dirname(f)}; free some or export into another --out`,
  EDQUOT: (f) => `the disk quota of ${path.dirname(f)} is used up; free some or export into another --out`,
  EACCES: (f) => `permission denied; let the user fsm-sync runs as write into ${path.dirname(f)}, or export into another --out`,
  EPERM: (f) => `not permitted; let the user fsm-sync runs as write into ${path.dirname(f)}, or export into another --out`,
  EROFS: (f) => `${path.dirname(f)} is on a read-only file system; export into another --out`,
  EEXIST: (f) => `${f} exists and is not a folder; export into another --out, or move it away`,
  ENOTDIR: (f) => `a part of ${f} is a file, not a folder; export into another --out`,
}

/** An error of `action` on `file` (`create the folder`, `write`), as one line with the fix. */
export function fileError(err: unknown, action: string, file: string): ExportFileError {
  const code = (err as NodeJS.ErrnoException).code
  const fix = code === undefined ? undefined : FIXES[code]
  const why = fix === undefined ? (err as Error).message : `${code}: ${fix(file)}`
  return new ExportFileError(`cannot ${action} ${file}: ${why}`, { cause: err })
}

/** An error of a system call (`syscall`, `code`: ENOSPC, EACCES, ...), as Node's fs throws them. */
export function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string'
}

/** Runs `fn`, turning an error of the file system into a fileError. */
export function onFile<T>(action: string, file: string, fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw isSystemError(err) ? fileError(err, action, file) : err
  }
}

interface Holder {
  pid?: unknown
  host?: unknown
  startedAt?: unknown
  token?: unknown
}

function readHolder(file: string): Holder | undefined {
  try {
    if (!lstatSync(file).isFile()) return undefined
    return JSON.parse(readFileSync(file, 'utf8')) as Holder
  } catch {
    return undefined
  }
}

/** Whether the holder's process is known to be gone: on this host, and no process has its pid. */
function gone(holder: Holder | undefined): boolean {
  if (holder === undefined || typeof holder.pid !== 'number' || holder.host !== hostname()) return false
  try {
    process.kill(holder.pid, 0)
    return false
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

export class OutDirLock {
  private constructor(
    private readonly file: string,
    private readonly token: string,
  ) {}

  /** Takes the folder for this export, or throws ExportBusyError naming the export that holds it. */
  static acquire(outDir: string, startedAt: string): OutDirLock {
    const file = path.join(outDir, LOCK_FILE)
    const token = randomUUID()
    const body = JSON.stringify({ pid: process.pid, host: hostname(), startedAt, token })
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(file, 'wx', 0o600)
        try {
          writeSync(fd, body)
        } finally {
          closeSync(fd)
        }
        return new OutDirLock(file, token)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError(err, 'create the lock file', file)
      }
      const holder = readHolder(file)
      if (attempt > 0 || !gone(holder)) {
        const who =
          holder === undefined
            ? 'another export'
            : `another export (pid ${String(holder.pid)} on ${String(holder.host)}, since ${String(holder.startedAt)})`
        throw new ExportBusyError(
          `${who} is writing into ${outDir}: wait for it to end, or export into another --out; if no export runs there, remove ${file}`,
        )
      }
      // Its process is gone (killed): the lock is taken over, and its work folders removed below.
      rmSync(file, { force: true })
    }
  }

  /** Whether the lock is still this export's (a racing take-over of a stale lock could have replaced it). */
  held(): boolean {
    return readHolder(this.file)?.token === this.token
  }

  release(): void {
    if (this.held()) rmSync(this.file, { force: true })
  }
}

/** Removes the work folders of earlier exports into `outDir` that were killed: with the lock held, none is in use. */
export function removeLeftovers(outDir: string): void {
  for (const name of readdirSync(outDir)) {
    if (!name.startsWith(WORK_PREFIX)) continue
    const dir = path.join(outDir, name)
    // A link or file of that name is not ours to remove.
    if (lstatSync(dir).isDirectory()) rmSync(dir, { recursive: true, force: true })
  }
}
