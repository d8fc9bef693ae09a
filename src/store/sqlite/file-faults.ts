// SQLite errors that are about the mirror file itself (its disk, its pages, its permissions), not
// about the statement or the row being written: what each means and what to do about it.
import fs from 'node:fs'
import { MirrorError } from './mirror-error.js'

export type FileFaultKind = 'full' | 'corrupt' | 'io' | 'readonly' | 'unopenable' | 'not-a-database'

export interface FileFault {
  kind: FileFaultKind
  /** What is wrong, for a person. */
  what: string
  /** What to do. */
  fix: string
}

const REBUILD =
  'restore it from a backup, or move it aside and run `fsm-sync sync` to build a new one (then `fsm-sync webhooks register` again)'

/** The fault an error from better-sqlite3 (or the file system) reveals, or undefined for any other error. */
export function fileFault(err: unknown): FileFault | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : ''
  const message = err instanceof Error ? err.message : String(err)
  const base = code.split('_').slice(0, 2).join('_')
  switch (base) {
    case 'SQLITE_FULL':
      return { kind: 'full', what: `the mirror is full (${message})`, fix: "free space on its disk (or raise the volume's quota)" }
    case 'SQLITE_CORRUPT':
      return { kind: 'corrupt', what: `the mirror is corrupt (${message})`, fix: REBUILD }
    case 'SQLITE_NOTADB':
      return {
        kind: 'not-a-database',
        what: `the file is not an SQLite database (${message})`,
        fix: `point FSM_DB at the mirror file, or ${REBUILD.replace('restore it from a backup, or ', '')}`,
      }
    case 'SQLITE_IOERR':
      return {
        kind: 'io',
        what: `reading or writing the mirror failed (${message})`,
        fix: 'check the disk and the volume it is on (dmesg, free space, mount state)',
      }
    case 'SQLITE_READONLY':
    case 'SQLITE_PERM':
      return {
        kind: 'readonly',
        what: `the mirror cannot be written (${message})`,
        fix: 'give this user write access to the file and its folder, or mount the volume read-write',
      }
    case 'SQLITE_CANTOPEN':
    case 'EACCES':
    case 'EISDIR':
    case 'EPERM':
      return {
        kind: 'unopenable',
        what: `the mirror cannot be opened (${message})`,
        fix: 'check that FSM_DB names a file (not a folder) that this user may read and write, in a folder it may write',
      }
    default:
      return undefined
  }
}

/**
 * Whether the error is SQLite's "database is locked" (SQLITE_BUSY, SQLITE_LOCKED and their extended
 * codes): another connection held the lock past the busy timeout (a cron `sync`, `reconcile`,
 * `doctor`). Like a mirror fault, it is no fault of the row being written: the write waits and is
 * tried again.
 */
export function mirrorLocked(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : ''
  const base = code.split('_').slice(0, 2).join('_')
  return base === 'SQLITE_BUSY' || base === 'SQLITE_LOCKED'
}

/**
 * The error to report for a failure to open or read the mirror at `file`: one line with the path,
 * what is wrong and what to do (a MirrorError), or `err` itself when it is not about the file.
 */
export function explainMirrorError(file: string, err: unknown): Error {
  const cause = err instanceof MirrorError && err.cause !== undefined ? err.cause : err
  // Already explained: a migration that failed on its own, or no file there at all.
  if (err instanceof MirrorError && (!fs.existsSync(file) || (err.code !== 'MIRROR_OPEN_FAILED' && fileFault(cause) === undefined)))
    return err
  const shape = fileShape(file)
  if (shape !== undefined) return new MirrorError('MIRROR_UNREADABLE', `the mirror ${file} ${shape}`, { cause })
  const fault = fileFault(cause)
  if (fault === undefined) return err instanceof Error ? err : new Error(String(err))
  const code = fault.kind === 'corrupt' || fault.kind === 'not-a-database' ? 'MIRROR_CORRUPT' : 'MIRROR_UNREADABLE'
  return new MirrorError(code, `the mirror ${file}: ${fault.what}: ${fault.fix}`, { cause })
}

/** What the file system says is wrong with the path, if anything: a folder, or no read access. */
function fileShape(file: string): string | undefined {
  let stat
  try {
    stat = fs.statSync(file)
  } catch {
    return undefined
  }
  if (stat.isDirectory()) return 'is a folder, not a file: point FSM_DB at the mirror file (e.g. data/fsm-mirror.db)'
  try {
    fs.accessSync(file, fs.constants.R_OK)
  } catch {
    return `cannot be read by this user (mode ${(stat.mode & 0o777).toString(8).padStart(3, '0')}, owner uid ${stat.uid}): give this user read and write access to it (chmod 600, chown), or run as its owner`
  }
  return undefined
}
