// The mirror's -wal file, for code that makes a commit durable by syncing it itself (the webhook
// inbox before it acks, the readiness probe): found by SQLite's own name for the main file, so a
// mirror reached through a symlink syncs the -wal SQLite writes, not a stale one beside the link.
import fs from 'node:fs'
import path from 'node:path'
import type { Sqlite } from './mirror-database.js'

/** SQLite's own name for the main file (symlinks resolved); undefined for an in-memory database. */
export function mainFileOf(sqlite: Sqlite): string | undefined {
  if (sqlite.memory || sqlite.name === '') return undefined
  const main = (sqlite.pragma('database_list') as { name: string; file: string }[]).find((d) => d.name === 'main')?.file
  return main !== undefined && main !== '' ? main : path.resolve(sqlite.name)
}

/** The -wal file of a connection in WAL mode; undefined in another journal mode or in memory. */
export function walFileOf(sqlite: Sqlite): string | undefined {
  const main = mainFileOf(sqlite)
  if (main === undefined || sqlite.pragma('journal_mode', { simple: true }) !== 'wal') return undefined
  return `${main}-wal`
}

/**
 * fdatasync of the -wal file, on libuv's pool rather than the event loop: a commit made with
 * synchronous=NORMAL is durable once it returns. Nothing to do outside WAL mode.
 */
export async function syncWalFile(sqlite: Sqlite): Promise<void> {
  const wal = walFileOf(sqlite)
  if (wal === undefined) return
  // 'r+': flushing a file needs write access on some platforms (Windows); nothing is written.
  const handle = await fs.promises.open(wal, 'r+')
  try {
    await handle.datasync()
  } finally {
    await handle.close()
  }
}
