// Opens the SQLite mirror: one writer connection with WAL, a busy timeout and migrations applied,
// or a read-only connection for `query` and outside readers. The mirror holds no secret (webhook
// secrets live in their own 0600 file beside it, secrets-file.ts), so its mode is a setting
// (FSM_DB_MODE, default 0640): a warehouse user in the file's group may read it.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, sql, type Migration } from 'kysely'
import { MIGRATION_HOOKS, MIGRATIONS } from './migrations/index.js'

export type Sqlite = Database.Database

export class MirrorError extends Error {
  readonly code: 'MIRROR_OPEN_FAILED' | 'MIGRATION_FAILED'
  constructor(code: 'MIRROR_OPEN_FAILED' | 'MIGRATION_FAILED', message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'MirrorError'
    this.code = code
  }
}

export interface Mirror {
  readonly path: string
  readonly sqlite: Sqlite
  readonly db: Kysely<unknown>
  close(): Promise<void>
}

export interface OpenMirrorOptions {
  readonly?: boolean
  /** Busy timeout in ms (design.md: about 5 s). */
  busyTimeoutMs?: number
  /** Mode of the mirror file and its -wal/-shm (config dbMode). Default DEFAULT_DB_MODE. */
  mode?: number
}

/** Owner read/write, group read: the mirror holds no secret, and warehouse readers may share a group. */
export const DEFAULT_DB_MODE = 0o640

export async function openMirror(file: string, options: OpenMirrorOptions = {}): Promise<Mirror> {
  const readonly = options.readonly ?? false
  let sqlite: Sqlite
  try {
    if (!readonly) prepareFile(file, options.mode ?? DEFAULT_DB_MODE)
    sqlite = new Database(file, { readonly, fileMustExist: readonly })
  } catch (err) {
    const hint = readonly && !existsSync(file) ? ': no mirror there yet; run `fsm-sync sync` first' : ''
    throw new MirrorError('MIRROR_OPEN_FAILED', `cannot open the mirror ${file}${hint}: ${(err as Error).message}`, { cause: err })
  }
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
  if (!readonly) {
    sqlite.pragma('journal_mode = WAL')
    sqlite.pragma('synchronous = NORMAL')
    // Bounds the WAL file left behind after a checkpoint (design.md, The mirror).
    sqlite.pragma(`journal_size_limit = ${64 * 1024 * 1024}`)
    // Fewer, larger automatic checkpoints (each one syncs the file); the daemon also checkpoints
    // on a timer. A bigger page cache keeps index updates of large backfills in memory.
    sqlite.pragma('wal_autocheckpoint = 10000')
    sqlite.pragma(`cache_size = ${-16 * 1024}`)
  } else {
    sqlite.pragma('query_only = ON')
  }
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqlite }) })
  const mirror: Mirror = { path: file, sqlite, db, close: () => db.destroy() }
  if (!readonly) await migrate(mirror)
  return mirror
}

function prepareFile(file: string, mode: number): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  // Create the file ourselves so it never exists with a wider mode, then set an old one's too
  // (0600 before the secrets left the mirror). SQLite creates -wal and -shm with the mode of the
  // database file, but leaves existing ones as they are: set those as well.
  closeSync(openSync(file, 'a', mode))
  chmodSync(file, mode)
  for (const suffix of ['-wal', '-shm']) {
    try {
      chmodSync(file + suffix, mode)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
}

async function migrate(mirror: Mirror): Promise<void> {
  const migrations: Record<string, Migration> = {}
  for (const [name, statements] of Object.entries(MIGRATIONS)) {
    migrations[name] = {
      up: async (db) => {
        MIGRATION_HOOKS[name]?.before?.(mirror.sqlite)
        for (const statement of statements) await sql.raw(statement).execute(db)
      },
    }
  }
  const migrator = new Migrator({ db: mirror.db, provider: { getMigrations: () => Promise.resolve(migrations) } })
  const { error, results } = await migrator.migrateToLatest()
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new MirrorError('MIGRATION_FAILED', `migration ${failed} of ${mirror.path} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`, { cause: error })
  }
  for (const [name, hooks] of Object.entries(MIGRATION_HOOKS)) {
    try {
      hooks.afterMigrations?.(mirror.sqlite)
    } catch (err) {
      throw new MirrorError('MIGRATION_FAILED', `the step after migration ${name} of ${mirror.path} failed: ${(err as Error).message}`, { cause: err })
    }
  }
}
