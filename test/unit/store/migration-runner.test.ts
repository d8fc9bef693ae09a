// The mirror's migrations run each in one transaction with their record; mirrors migrated by
// kysely's Migrator, or left half-migrated by it, still open.
import { rmSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { MIGRATIONS } from '../../../src/store/migrations/index.js'
import { MirrorError, openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { tempDir } from '../../support/temp-mirror.js'

let dir: string
let file: string
beforeEach(() => {
  dir = tempDir()
  file = path.join(dir, 'mirror.db')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

function objects(): string[] {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(`SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name`).pluck().all() as string[]
  } finally {
    db.close()
  }
}

function recorded(): string[] {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare(`SELECT name FROM kysely_migration ORDER BY name`).pluck().all() as string[]
  } finally {
    db.close()
  }
}

async function openError(migrations?: Record<string, readonly string[]>): Promise<MirrorError> {
  const err: unknown = await openMirror(file, migrations === undefined ? {} : { migrations }).then(
    async (m) => {
      await m.close()
      return undefined
    },
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(MirrorError)
  return err as MirrorError
}

describe('a migration that fails half-way leaves nothing of itself behind and the next open goes on', () => {
  const first = { '0001-a': ['CREATE TABLE a (id TEXT PRIMARY KEY) STRICT'] }
  const broken = {
    ...first,
    '0002-b': [
      'CREATE TABLE b (id TEXT PRIMARY KEY) STRICT',
      'CREATE INDEX b_id ON b (id)',
      'CREATE TABLE c (id TEXT REFERENCES nowhere(id) STRICT',
    ],
  }
  const fixed = {
    ...first,
    '0002-b': ['CREATE TABLE b (id TEXT PRIMARY KEY) STRICT', 'CREATE INDEX b_id ON b (id)', 'CREATE TABLE c (id TEXT) STRICT'],
  }

  test('the failed migration is rolled back whole, the ones before it stay, and the error names both', async () => {
    const err = await openError(broken)
    expect(err.code).toBe('MIGRATION_FAILED')
    expect(err.message).toContain('migration 0002-b of')
    expect(err.message).toContain(file)
    expect(err.message).toContain('rolled back')
    expect(objects()).toEqual(['a', 'kysely_migration'])
    expect(recorded()).toEqual(['0001-a'])
  })

  test('the next open, with the migration fixed, applies it and records it once', async () => {
    await openError(broken)
    const mirror = await openMirror(file, { migrations: fixed })
    await mirror.close()
    expect(objects()).toEqual(['a', 'b', 'b_id', 'c', 'kysely_migration'])
    expect(recorded()).toEqual(['0001-a', '0002-b'])
    // And again: nothing left to apply, nothing applied twice.
    await (await openMirror(file, { migrations: fixed })).close()
    expect(recorded()).toEqual(['0001-a', '0002-b'])
  })
})

describe("mirrors migrated or half-migrated by kysely's Migrator still open", () => {
  async function migrateWithKysely(migrations: Record<string, readonly string[]>): Promise<void> {
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(file) }) })
    const provider = {
      getMigrations: () =>
        Promise.resolve(
          Object.fromEntries(
            Object.entries(migrations).map(([name, statements]) => [
              name,
              {
                up: async (k: Kysely<unknown>) => {
                  for (const s of statements) await sql.raw(s).execute(k)
                },
              },
            ]),
          ),
        ),
    }
    const { error } = await new Migrator({ db, provider }).migrateToLatest()
    await db.destroy()
    expect(error).toBeUndefined()
  }

  test('a mirror fully migrated by kysely opens without applying anything again', async () => {
    await migrateWithKysely(MIGRATIONS)
    const mirror = await openMirror(file)
    await mirror.close()
    expect(recorded()).toEqual(Object.keys(MIGRATIONS).sort())
  })

  test('one migrated by kysely up to an older version gets only the newer migrations', async () => {
    const names = Object.keys(MIGRATIONS).sort()
    await migrateWithKysely(Object.fromEntries(names.slice(0, 3).map((n) => [n, MIGRATIONS[n]!])))
    const mirror = await openMirror(file)
    await mirror.close()
    expect(recorded()).toEqual(names)
  })

  /** What a process killed part-way through 0001-core under kysely left: some tables, no record. */
  function halfMigrated(withRows: boolean): void {
    const db = new Database(file)
    db.exec(`CREATE TABLE kysely_migration (name varchar(255) not null primary key, timestamp varchar(255) not null)`)
    for (const s of MIGRATIONS['0001-core']!.slice(0, 5)) db.exec(s)
    if (withRows) db.prepare(`INSERT INTO clients (id, updated_at, raw, synced_at) VALUES ('c1', 'x', '{}', 'x')`).run()
    db.close()
  }

  test('one left half-migrated (tables present, no record) with empty tables is cleaned up and migrated', async () => {
    halfMigrated(false)
    const warned: unknown[] = []
    const mirror = await openMirror(file, { logger: { warn: (fields: unknown) => warned.push(fields) } })
    await mirror.close()
    expect(recorded()).toEqual(Object.keys(MIGRATIONS).sort())
    expect(warned).toEqual([
      { migration: '0001-core', objects: ['clients', 'clients_updated_at', 'jobs', 'jobs_updated_at', 'jobs_client_id'] },
    ])
  })

  test('one left half-migrated whose tables hold rows is refused with the fix, and left as it was', async () => {
    halfMigrated(true)
    const before = objects()
    const err = await openError()
    expect(err.code).toBe('MIGRATION_FAILED')
    expect(err.message).toContain(file)
    expect(err.message).toContain('clients hold rows')
    expect(err.message).toContain('Move the file aside')
    expect(objects()).toEqual(before)
  })

  test('one migrated by a newer version (an unknown migration recorded) is refused with the fix', async () => {
    await (await openMirror(file)).close()
    const db = new Database(file)
    db.prepare(`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999-future', 'x')`).run()
    db.close()
    const err = await openError()
    expect(err.message).toContain('newer fsm-sync')
    expect(err.message).toContain('9999-future')
  })
})
