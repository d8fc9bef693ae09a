// Opens the SQLite mirror: one writer connection with WAL, a busy timeout and migrations applied,
// or a read-only connection for `query` and outside readers. The mirror holds no secret (webhook
// secrets live in their own 0600 file beside it, secrets-file.ts), so its mode is a setting
// (FSM_DB_MODE, default 0640): a warehouse user in the file's group may read it. That mode is set
// only once the mirror is known to hold no secret: a new file is created 0600, and a mirror from an
// older release, with its secrets table or with their bytes maybe still in its -wal (a scrub the
// secrets migration could not finish), is kept 0600 until they are gone.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import type { Logger } from '../../log/logger.js'
import { runMigrations, type Migrations } from './migration-runner.js'
import type { MigrationHooks } from '../migrations/types.js'
import { MirrorError } from './mirror-error.js'
import { explainMirrorError } from './file-faults.js'
import { SECRETS_FILE_MODE } from '../repositories/secrets-file.js'
import { parkable, type MirrorParking } from './parkable-connection.js'

export { MirrorError } from './mirror-error.js'
export { explainMirrorError } from './file-faults.js'

export type Sqlite = Database.Database

export interface Mirror {
  readonly path: string
  readonly sqlite: Sqlite
  /** A writer opened with `parkable`: closes while idle, reopens on its next use (parkable-connection.ts). */
  readonly parking?: MirrorParking
  close(): Promise<void>
}

export interface OpenMirrorOptions {
  readonly?: boolean
  /** Busy timeout in ms (about 5 s). */
  busyTimeoutMs?: number
  /** Mode of the mirror file and its -wal/-shm (config dbMode). Default DEFAULT_DB_MODE. */
  mode?: number
  /** The migrations to apply (tests give their own, with no hooks); the shipped list by default. */
  migrations?: Migrations
  /** Told when a migration an earlier version left half-applied was cleaned up and applied again. */
  logger?: Pick<Logger, 'warn'>
  /** A writer whose connection can be parked while idle (the daemon's accounts, src/store/README.md "Idle mirrors"). */
  parkable?: boolean
}

/** Owner read/write, group read: the mirror holds no secret, and warehouse readers may share a group. */
export const DEFAULT_DB_MODE = 0o640

/**
 * Page cache of each connection, KiB: bounded, since a process may hold many mirrors open (each
 * connection's cache fills up to this as pages are read, and is not shared). The writer's is the
 * larger so index updates of a backfill stay in memory; a reader streams. src/store/README.md.
 */
export const WRITER_CACHE_KIB = 4 * 1024
export const READER_CACHE_KIB = 2 * 1024

export async function openMirror(file: string, options: OpenMirrorOptions = {}): Promise<Mirror> {
  // Only a writer migrates: a reader (`status`, `query`) loads none of the migrations.
  const migrating = options.readonly === true ? undefined : await loadMigrating()
  return open(file, options, migrating)
}

type Migrating = Awaited<ReturnType<typeof loadMigrating>>

async function loadMigrating() {
  const [{ MIGRATION_HOOKS, MIGRATIONS }, { secretsLeftInMirror }] = await Promise.all([
    import('../migrations/index.js'),
    import('../migrations/0011-secrets-file.js'),
  ])
  return { MIGRATION_HOOKS, MIGRATIONS, secretsLeftInMirror }
}

/** Everything here is synchronous (better-sqlite3); openMirror keeps the promise its callers await. */
function open(file: string, options: OpenMirrorOptions, migrating: Migrating | undefined): Mirror {
  const readonly = options.readonly ?? false
  let sqlite: Sqlite
  try {
    if (!readonly) createFile(file)
    sqlite = new Database(file, { readonly, fileMustExist: readonly })
  } catch (err) {
    const hint = readonly && !existsSync(file) ? ': no mirror there yet; run `fsm-sync sync` first' : ''
    throw explainMirrorError(
      file,
      new MirrorError('MIRROR_OPEN_FAILED', `cannot open the mirror ${file}${hint}: ${(err as Error).message}`, { cause: err }),
    )
  }
  try {
    configure(sqlite, readonly, options)
  } catch (err) {
    sqlite.close()
    throw explainMirrorError(file, err)
  }
  // Typed queries compile with typed-query.ts and run on `sqlite`: opening needs no query builder.
  const close = () => {
    if (sqlite.open) sqlite.close()
    return Promise.resolve()
  }
  const mirror: Mirror = { path: file, sqlite, close }
  if (migrating !== undefined) {
    const { MIGRATION_HOOKS, MIGRATIONS, secretsLeftInMirror } = migrating
    try {
      // Before anything writes: an older mirror may have been widened by an earlier open.
      if (secretsLeftInMirror(sqlite) !== undefined) setMode(file, SECRETS_FILE_MODE)
      const hooks: Readonly<Record<string, MigrationHooks>> = options.migrations === undefined ? MIGRATION_HOOKS : {}
      const report = runMigrations(sqlite, file, options.migrations ?? MIGRATIONS, hooks)
      for (const r of report.repaired)
        options.logger?.warn(
          { migration: r.migration, objects: r.objects },
          'a migration an earlier version left half-applied (its tables were empty) was cleaned up and applied again',
        )
      runAfterMigrations(sqlite, file, hooks)
      const left = secretsLeftInMirror(sqlite)
      if (left === undefined) setMode(file, options.mode ?? DEFAULT_DB_MODE)
      else {
        setMode(file, SECRETS_FILE_MODE)
        options.logger?.warn(
          { file, mode: SECRETS_FILE_MODE.toString(8) },
          `the -wal file of the mirror ${file} may still hold the webhook secrets moved out of it (another process was reading an older snapshot, so the log could not be emptied): the mirror and its -wal/-shm stay mode 0600, not FSM_DB_MODE, until it is. Close the other readers (sqlite3, warehouse tools, fsm-sync query) and restart fsm-sync: the next open empties the log and sets FSM_DB_MODE`,
        )
      }
    } catch (err) {
      sqlite.close()
      throw explainMirrorError(file, err)
    }
  }
  if (options.parkable === true && !readonly) {
    // A reopen: the file exists and is migrated (by this open), so only the connection's settings.
    const p = parkable(sqlite, () => reopen(file, options))
    return {
      path: file,
      sqlite: p.sqlite,
      parking: p.parking,
      close: () => {
        p.close()
        return Promise.resolve()
      },
    }
  }
  return mirror
}

function reopen(file: string, options: OpenMirrorOptions): Sqlite {
  let sqlite: Sqlite
  try {
    sqlite = new Database(file, { fileMustExist: true })
  } catch (err) {
    throw explainMirrorError(
      file,
      new MirrorError('MIRROR_OPEN_FAILED', `cannot open the mirror ${file} again: ${(err as Error).message}`, { cause: err }),
    )
  }
  try {
    configure(sqlite, false, options)
  } catch (err) {
    sqlite.close()
    throw explainMirrorError(file, err)
  }
  return sqlite
}

function configure(sqlite: Sqlite, readonly: boolean, options: OpenMirrorOptions): void {
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
  // Reads the first page: a file that is not a database (or not one any more) says so here, once.
  sqlite.prepare('SELECT count(*) FROM sqlite_master').pluck().get()
  if (!readonly) {
    // Lets retention give freed pages back to the file system. It takes effect only in a file with
    // no table yet, and only before journal_mode is set; on an older mirror it changes nothing
    // until a VACUUM (enableIncrementalVacuum, run once by the daemon).
    sqlite.pragma('auto_vacuum = INCREMENTAL')
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = NORMAL')
    // Bounds the WAL file left behind after a checkpoint.
    sqlite.pragma(`journal_size_limit = ${64 * 1024 * 1024}`)
    // Fewer, larger automatic checkpoints (each one syncs the file); the daemon also checkpoints
    // on a worker thread (background-checkpoints.ts).
    sqlite.pragma('wal_autocheckpoint = 10000')
    sqlite.pragma(`cache_size = ${-WRITER_CACHE_KIB}`)
  } else {
    sqlite.pragma('query_only = ON')
    sqlite.pragma(`cache_size = ${-READER_CACHE_KIB}`)
  }
}

/** Creates a missing mirror 0600 (it gets its configured mode once migrated), never wider. */
function createFile(file: string): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  closeSync(openSync(file, 'a', SECRETS_FILE_MODE))
}

/**
 * Sets the mode of the mirror and of its -wal and -shm: SQLite creates those with the mode of the
 * database file, but leaves existing ones as they are.
 */
function setMode(file: string, mode: number): void {
  chmodSync(file, mode)
  for (const suffix of ['-wal', '-shm']) {
    try {
      chmodSync(file + suffix, mode)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
}

/** The steps some migrations need outside any transaction, at every writer open (MigrationHooks). */
function runAfterMigrations(sqlite: Sqlite, file: string, hooks: Readonly<Record<string, MigrationHooks>>): void {
  for (const [name, hook] of Object.entries(hooks)) {
    try {
      hook.afterMigrations?.(sqlite)
    } catch (err) {
      throw new MirrorError('MIGRATION_FAILED', `the step after migration ${name} of ${file} failed: ${(err as Error).message}`, {
        cause: err,
      })
    }
  }
}
