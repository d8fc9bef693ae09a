// `status`, `query` and `doctor` on a mirror that cannot be read: a folder, a file of random bytes,
// a truncated copy, a copy with a table's pages overwritten. One line with the path, what is wrong
// and what to do; exit 1; no stack trace.
import { copyFileSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { cliInProcess } from '../../support/cli-in-process.js'
import { loadConfig } from '../../../src/config/index.js'
import { mirrorChecks } from '../../../src/daemon/doctor-checks.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { tempDir, tempMirror } from '../../support/temp-mirror.js'

let dir: string
let good: string

beforeAll(async () => {
  dir = tempDir()
  const m = await tempMirror()
  const insert = m.sqlite.prepare(`INSERT INTO clients (id, first_name, updated_at, raw, synced_at) VALUES (?, ?, 'x', ?, 'x')`)
  m.sqlite.transaction(() => {
    for (let i = 0; i < 3000; i++) insert.run(`c${i}`, `name ${i}`, JSON.stringify({ id: `c${i}`, pad: 'p'.repeat(200) }))
  })()
  // A mirror that was synced (status and query refuse one that never was: require-synced.ts).
  const state = new SyncStateStore(m.sqlite)
  const now = new Date().toISOString()
  state.finishRun(state.startRun('sweep', 'clients', now), { outcome: 'success', rows: 3000, requests: 30 }, now)
  good = path.join(dir, 'good.db')
  await m.close()
  copyFileSync(path.join(m.dir, 'mirror.db'), good)
  rmSync(m.dir, { recursive: true, force: true })
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function folder(): string {
  const p = path.join(dir, 'a-folder')
  mkdirSync(p, { recursive: true })
  return p
}
function randomBytes(): string {
  const p = path.join(dir, 'random.db')
  writeFileSync(p, Buffer.from(Array.from({ length: 16384 }, (_, i) => (i * 7919 + 13) % 251)))
  return p
}
function truncated(): string {
  const p = path.join(dir, 'truncated.db')
  const bytes = readFileSync(good)
  writeFileSync(p, bytes.subarray(0, Math.floor(bytes.length / 3)))
  return p
}
/** Overwrites pages at the end of the file with garbage: rows of clients and its index, written last. */
function corruptPages(): string {
  const p = path.join(dir, 'corrupt.db')
  copyFileSync(good, p)
  const db = new Database(p, { readonly: true })
  const pageSize = db.pragma('page_size', { simple: true }) as number
  const pages = db.pragma('page_count', { simple: true }) as number
  db.close()
  const fd = openSync(p, 'r+')
  for (let page = pages - 40; page < pages; page++) writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (page - 1) * pageSize + 8)
  closeSync(fd)
  return p
}

describe('status, query and doctor on an unreadable or corrupt mirror name the path and the cause', () => {
  const cases: [string, () => string, RegExp][] = [
    ['a folder', folder, /is a folder, not a file: point FSM_DB at the mirror file/],
    ['a file of random bytes', randomBytes, /not an SQLite database .*point FSM_DB at the mirror file/],
    ['a truncated mirror', truncated, /corrupt .*restore it from a backup, or move it aside/],
    ['a mirror with overwritten pages', corruptPages, /corrupt .*restore it from a backup, or move it aside/],
  ]
  test.each(cases)('%s: one line with the path, the cause and the fix; exit 1', async (_name, make, cause) => {
    const db = make()
    for (const args of [['status'], ['query', 'SELECT count(*), max(raw) FROM clients']]) {
      const r = await cliInProcess(args, db)
      expect(r.code, `${args[0]!}: ${r.stderr}`).toBe(1)
      const lines = r.stderr.trimEnd().split('\n')
      expect(lines, args[0]).toHaveLength(1)
      expect(lines[0]).toContain(db)
      expect(lines[0]).toMatch(cause)
      expect(r.stderr).not.toMatch(/\n\s+at /)
    }
  })

  test('doctor runs quick_check and says "corrupt" for overwritten pages, not "check folder permissions"', async () => {
    const db = corruptPages()
    const checks = await mirrorChecks(loadConfig({ flags: { _: [] }, env: { FSM_DB: db } }))
    const failed = checks.filter((c) => !c.ok)
    expect(failed.map((c) => c.label)).toContain('mirror intact (quick_check)')
    for (const c of failed.filter((f) => f.label.startsWith('mirror'))) {
      expect(c.detail).toContain('corrupt')
      expect(c.detail).not.toContain('folder is writable')
    }
  })
})
