// Applies the mirror's migrations, each one and its bookkeeping row in one transaction. kysely's
// Migrator runs a migration's statements one by one on SQLite (its adapter declares no
// transactional DDL), so a process killed between two of them left tables behind with no record of
// the migration, and every later start failed on `table ... already exists`. SQLite itself runs DDL
// in transactions: each migration here runs inside BEGIN IMMEDIATE ... COMMIT, so a kill at any
// moment leaves either the whole migration or nothing of it, and the next start goes on.
//
// The record stays kysely's table (`kysely_migration`: name, timestamp), so mirrors migrated by
// earlier versions open as before. BEGIN IMMEDIATE takes the write lock, so one process migrates at
// a time; one that waited reads the record again under the lock and skips what the other applied.
import type Database from 'better-sqlite3'
import { quoteIdentifier } from '../../model/sql-names.js'
import type { MigrationHooks, MigrationStatements } from '../migrations/types.js'
import { MirrorError } from './mirror-error.js'

export const MIGRATION_TABLE = 'kysely_migration'

export type Migrations = Readonly<Record<string, MigrationStatements>>

export interface MigrationReport {
  applied: string[]
  /** Migrations an earlier version left half-applied on an empty mirror, cleaned up and applied again. */
  repaired: { migration: string; objects: string[] }[]
}

const CREATED = /^\s*CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX|VIEW|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:"([^"]+)"|(\w+))/i

/** `hooks[name].before` runs inside that migration's transaction, right before its statements. */
export function runMigrations(
  sqlite: Database.Database,
  file: string,
  migrations: Migrations,
  hooks: Readonly<Record<string, MigrationHooks>> = {},
): MigrationReport {
  const names = Object.keys(migrations).sort()
  const report: MigrationReport = { applied: [], repaired: [] }
  // Read without the lock first: an up-to-date mirror (every start but the first) takes no write lock.
  const recorded = appliedNames(sqlite)
  checkKnown(recorded, names, file)
  if (names.every((n) => recorded.has(n))) return report
  for (const name of names) {
    const statements = migrations[name]!
    try {
      sqlite.exec('BEGIN IMMEDIATE')
    } catch (err) {
      throw new MirrorError(
        'MIGRATION_FAILED',
        `cannot migrate the mirror ${file}: the write lock was not granted (${(err as Error).message}); another process holds it: try again, or stop the other process`,
        { cause: err },
      )
    }
    try {
      sqlite.exec(`CREATE TABLE IF NOT EXISTS ${MIGRATION_TABLE} (name varchar(255) not null primary key, timestamp varchar(255) not null)`)
      const done = appliedNames(sqlite)
      checkKnown(done, names, file)
      if (done.has(name)) {
        sqlite.exec('COMMIT')
        continue
      }
      const leftovers = clearLeftovers(sqlite, file, name, statements)
      if (leftovers.length > 0) report.repaired.push({ migration: name, objects: leftovers })
      hooks[name]?.before?.(sqlite)
      for (const statement of statements) sqlite.prepare(statement).run()
      sqlite.prepare(`INSERT INTO ${MIGRATION_TABLE} (name, timestamp) VALUES (?, ?)`).run(name, new Date().toISOString())
      sqlite.exec('COMMIT')
      report.applied.push(name)
    } catch (err) {
      if (sqlite.inTransaction) sqlite.exec('ROLLBACK')
      if (err instanceof MirrorError) throw err
      throw new MirrorError('MIGRATION_FAILED', `migration ${name} of ${file} failed and was rolled back: ${(err as Error).message}`, {
        cause: err,
      })
    }
  }
  return report
}

function appliedNames(sqlite: Database.Database): Set<string> {
  const exists = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(MIGRATION_TABLE) !== undefined
  if (!exists) return new Set()
  return new Set(sqlite.prepare(`SELECT name FROM ${MIGRATION_TABLE}`).pluck().all() as string[])
}

/** A mirror migrated by a newer version has tables this one does not know how to keep up to date. */
function checkKnown(recorded: ReadonlySet<string>, names: readonly string[], file: string): void {
  const unknown = [...recorded].filter((n) => !names.includes(n))
  if (unknown.length > 0) {
    throw new MirrorError(
      'MIGRATION_FAILED',
      `the mirror ${file} was migrated by a newer fsm-sync (migrations ${unknown.join(', ')} are unknown to this version): run that version, or point FSM_DB at another file`,
    )
  }
}

/**
 * Objects this (unrecorded) migration creates that exist already: left by an earlier version killed
 * half-way through it. Nothing can have written to them since (every start failed), but that is
 * checked: empty ones are dropped here, inside the migration's transaction; one that holds rows
 * stops the start with the fix.
 */
function clearLeftovers(sqlite: Database.Database, file: string, name: string, statements: MigrationStatements): string[] {
  const objectType = sqlite.prepare(`SELECT type FROM sqlite_master WHERE name = ?`).pluck()
  const found: { type: string; name: string }[] = []
  for (const statement of statements) {
    const m = CREATED.exec(statement)
    const object = m?.[2] ?? m?.[3]
    if (object === undefined) continue
    const type = objectType.get(object) as string | undefined
    if (type !== undefined) found.push({ type, name: object })
  }
  if (found.length === 0) return []
  const holding = found.filter(
    (o) => o.type === 'table' && sqlite.prepare(`SELECT 1 FROM ${quoteIdentifier(o.name)} LIMIT 1`).get() !== undefined,
  )
  if (holding.length > 0) {
    throw new MirrorError(
      'MIGRATION_FAILED',
      `the mirror ${file} holds tables of migration ${name} (${found.map((o) => o.name).join(', ')}) without a record of it, and ${holding.map((o) => o.name).join(', ')} hold rows: an earlier version was stopped half-way through it. Move the file aside and run \`fsm-sync sync\` to build a new mirror (then \`fsm-sync webhooks register\` again), or ask for help to repair it by hand`,
    )
  }
  // Views and triggers first: dropping a table under a view is allowed, but leaves a broken view.
  const order = ['view', 'trigger', 'index', 'table']
  for (const o of [...found].sort((a, b) => order.indexOf(a.type) - order.indexOf(b.type))) {
    sqlite.exec(`DROP ${o.type.toUpperCase()} IF EXISTS ${quoteIdentifier(o.name)}`)
  }
  return found.map((o) => o.name)
}
