// Opens the SQLite mirror: one writer connection with WAL, a busy timeout and migrations applied,
// or a read-only connection for `query` and outside readers. The file is created readable by its
// owner only (contract.md, Guarantees 6: the secret store lives in it).
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, sql, type Migration } from 'kysely'
import { MIGRATIONS } from './migrations/index.js'

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
}

export async function openMirror(file: string, options: OpenMirrorOptions = {}): Promise<Mirror> {
  const readonly = options.readonly ?? false
  let sqlite: Sqlite
  try {
    if (!readonly) prepareFile(file)
    sqlite = new Database(file, { readonly, fileMustExist: readonly })
  } catch (err) {
    const hint = readonly && !existsSync(file) ? ': no mirror there yet; run `fsm-sync sync` first' : ''
    throw new MirrorError('MIRROR_OPEN_FAILED', `cannot open the mirror ${file}${hint}: ${(err as Error).message}`, { cause: err })
  }
  sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
  if (!readonly) {
    // Lets retention give freed pages back to the file system. It takes effect only in a file with
    // no table yet, and only before journal_mode is set; on an older mirror it changes nothing
    // until a VACUUM (enableIncrementalVacuum, run once by the daemon).
    sqlite.pragma('auto_vacuum = INCREMENTAL')
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

function prepareFile(file: string): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  // Create the file ourselves so it never exists with a wider mode, then narrow an old one too.
  closeSync(openSync(file, 'a', 0o600))
  chmodSync(file, 0o600)
}

async function migrate(mirror: Mirror): Promise<void> {
  const migrations: Record<string, Migration> = {}
  for (const [name, statements] of Object.entries(MIGRATIONS)) {
    migrations[name] = {
      up: async (db) => {
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
}
