import type { Sqlite } from '../sqlite/mirror-database.js'

/** A migration as a list of single SQL statements (better-sqlite3 prepares one statement at a time). */
export type MigrationStatements = readonly string[]

/**
 * Code some migrations need beside their statements (a file to write, a checkpoint to run), keyed
 * by the migration's name in MIGRATION_HOOKS.
 */
export interface MigrationHooks {
  /**
   * Runs on the writer connection right before the migration's statements, inside the migration's
   * transaction (the runner gives each migration one). Must be idempotent: a run killed before the
   * migration is recorded runs it again.
   */
  before?(sqlite: Sqlite): void
  /**
   * Runs on the writer connection at every writer open, after all migrations are applied and
   * outside any transaction (a checkpoint cannot run inside one). Must be idempotent and cheap when
   * it has nothing left to do; what it could not finish (a reader held the log) it tries again at
   * the next open.
   */
  afterMigrations?(sqlite: Sqlite): void
}
