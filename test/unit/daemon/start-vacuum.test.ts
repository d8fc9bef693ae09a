// The one-time VACUUM that switches an older mirror to incremental auto-vacuum is synchronous: at
// start it would hold the daemon (no listener, no /healthz) for as long as it takes. A large mirror
// is therefore left as it is, with a warning saying how to switch it with the daemon stopped.
import path from 'node:path'
import { Writable } from 'node:stream'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { enableIncrementalVacuumAtStart, START_VACUUM_MAX_BYTES } from '../../../src/daemon/retention-job.js'
import { createLogger } from '../../../src/log/logger.js'
import { fileBytes, incrementalVacuumEnabled } from '../../../src/store/sqlite/incremental-vacuum.js'
import { openMirror } from '../../../src/store/sqlite/mirror-database.js'
import { tempDir } from '../../support/temp-mirror.js'

function capture() {
  const lines: Record<string, unknown>[] = []
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>)
      cb()
    },
  })
  return { lines, logger: createLogger({ level: 'debug', destination }) }
}

/** A mirror made before incremental auto-vacuum (a table existed before openMirror could set it), with some rows. */
function olderMirror(): string {
  const file = path.join(tempDir(), 'older.db')
  const older = new Database(file)
  older.pragma('journal_mode = WAL')
  older.exec('CREATE TABLE made_by_an_older_version (x)')
  const insert = older.prepare('INSERT INTO made_by_an_older_version (x) VALUES (?)')
  older.transaction(() => {
    for (let i = 0; i < 200; i++) insert.run('x'.repeat(2000))
  })()
  older.close()
  return file
}

test('a large older mirror is not vacuumed at daemon start: it stays as it is and a warning gives the command and the disk it needs', async () => {
  const file = olderMirror()
  const mirror = await openMirror(file)
  try {
    const bytes = fileBytes(file)
    const { lines, logger } = capture()
    enableIncrementalVacuumAtStart(mirror.sqlite, file, logger, bytes - 1)
    expect(incrementalVacuumEnabled(mirror.sqlite)).toBe(false)
    const warn = lines.find((l) => l.level === 'warn')
    expect(warn).toMatchObject({ bytes, diskNeededBytes: 2 * bytes })
    expect(String(warn!.msg)).toContain(`stop the daemon and run: sqlite3 '${file}' "PRAGMA auto_vacuum=INCREMENTAL; VACUUM"`)
    expect(String(warn!.msg)).toContain('twice the mirror')
    expect(lines.filter((l) => String(l.msg).includes('switched'))).toEqual([])
  } finally {
    await mirror.close()
  }
})

test('a small older mirror is still switched at start, once', async () => {
  expect(START_VACUUM_MAX_BYTES).toBe(256 * 1024 * 1024)
  const file = olderMirror()
  const mirror = await openMirror(file)
  try {
    const { lines, logger } = capture()
    enableIncrementalVacuumAtStart(mirror.sqlite, file, logger)
    expect(incrementalVacuumEnabled(mirror.sqlite)).toBe(true)
    enableIncrementalVacuumAtStart(mirror.sqlite, file, logger)
    expect(lines.filter((l) => String(l.msg).includes('switched to incremental auto-vacuum'))).toHaveLength(1)
    expect(lines.filter((l) => l.level === 'warn')).toEqual([])
  } finally {
    await mirror.close()
  }
})
