// The group commit shared by the inbox and the intake journal (src/webhooks/group-commit.ts), with a
// commit function that records its groups and a sync the test holds, fails or lets through: what
// one turn submits is one commit and one sync, what arrives during the sync is the next group, a
// failed sync refuses every later item, close() gives up on a sync that never returns, and no -wal
// file means FULL commits without a sync.
import fs from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { GroupCommit, type GroupCommitMetrics, type SyncFile } from '../../../src/webhooks/group-commit.js'
import { tempDir } from '../../support/temp-mirror.js'
import { track } from '../../support/track-settled.js'

const turns = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

function setup(options: { walPath?: string | undefined; closeTimeoutMs?: number } = {}) {
  const lines: string[] = []
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
  })
  const wal = path.join(tempDir(), 'x.db-wal')
  fs.writeFileSync(wal, '')
  const groups: { items: string[]; full: boolean }[] = []
  const held: ((err: NodeJS.ErrnoException | null) => void)[] = []
  const syncFile: SyncFile = (_fd, done) => held.push(done)
  const metrics: GroupCommitMetrics = { groupCommits: 0, groupedDeliveries: 0, commitMicros: 0, walSyncMicros: 0 }
  const durable: string[][] = []
  const unit = new GroupCommit<string, string>({
    name: 'test store',
    logger,
    commit: (items, full) => (groups.push({ items: [...items], full }), items.map((i) => `${i}-ok`)),
    walPath: 'walPath' in options ? options.walPath : wal,
    syncFile,
    metrics,
    durable: (items) => durable.push([...items]),
    ...(options.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: options.closeTimeoutMs }),
  })
  return { unit, groups, held, metrics, durable, lines }
}

test('one turn is one commit and one sync, answered after the sync; what arrives during it is the next group', async () => {
  const s = setup()
  const a = track(s.unit.submit('a'))
  const b = track(s.unit.submit('b'))
  await turns()
  expect(s.groups).toEqual([{ items: ['a', 'b'], full: false }])
  expect(s.held).toHaveLength(1)
  expect(a.settled()).toBe(false)
  const c = track(s.unit.submit('c'))
  await turns()
  expect(s.groups).toHaveLength(1)
  s.held.shift()!(null)
  expect(await Promise.all([a.value, b.value])).toEqual(['a-ok', 'b-ok'])
  expect(c.settled()).toBe(false)
  await turns()
  expect(s.groups[1]).toEqual({ items: ['c'], full: false })
  s.held.shift()!(null)
  expect(await c.value).toBe('c-ok')
  expect(s.durable).toEqual([['a', 'b'], ['c']])
  expect(s.metrics).toMatchObject({ groupCommits: 2, groupedDeliveries: 3 })
  await s.unit.close()
})

test('a failed sync answers 503 to its group, to those waiting and to every later item, and says so', async () => {
  const s = setup()
  const a = track(s.unit.submit('a'))
  await turns()
  const b = track(s.unit.submit('b'))
  s.held.shift()!(Object.assign(new Error('EIO (simulated)'), { code: 'EIO' }))
  for (const t of [a, b]) await expect(t.value).rejects.toMatchObject({ name: 'InboxUnavailableError', code: 'INBOX_WRITE_FAILED' })
  await expect(s.unit.submit('c')).rejects.toThrow(/the test store cannot confirm writes since a sync of its log failed/)
  expect(s.groups).toHaveLength(1)
  expect(s.lines.join('')).toMatch(/syncing the test store log to disk failed: answering 503/)
  await s.unit.close()
})

test('close() waits for the sync in flight, commits what waits, refuses later items', async () => {
  const s = setup()
  const a = track(s.unit.submit('a'))
  await turns()
  const b = track(s.unit.submit('b'))
  const closed = track(s.unit.close())
  await expect(s.unit.submit('c')).rejects.toMatchObject({ code: 'INBOX_CLOSED' })
  s.held.shift()!(null)
  expect(await a.value).toBe('a-ok')
  await turns()
  expect(closed.settled()).toBe(false)
  s.held.shift()!(null)
  expect(await b.value).toBe('b-ok')
  await closed.value
  expect(s.unit.abandoned).toBe(false)
})

test("close()'s deadline answers 503 to a sync that never returns, and the unit says it abandoned it", async () => {
  const s = setup({ closeTimeoutMs: 50 })
  const a = track(s.unit.submit('a'))
  await turns()
  expect(s.held).toHaveLength(1)
  await s.unit.close()
  await expect(a.value).rejects.toMatchObject({ code: 'INBOX_WRITE_FAILED' })
  expect(s.unit.abandoned).toBe(true)
  expect(s.lines.join('')).toMatch(/still in flight \(the disk is not answering\)/)
  // The late callback finds nothing to answer.
  s.held.shift()!(null)
})

test('no -wal file to open: that group is answered 503, later ones commit with synchronous=FULL and without a sync', async () => {
  const s = setup({ walPath: path.join(tempDir(), 'missing', 'x.db-wal') })
  await expect(s.unit.submit('a')).rejects.toMatchObject({ code: 'INBOX_WRITE_FAILED' })
  expect(s.lines.join('')).toMatch(
    /cannot open its -wal file to sync it: answering 503 to these deliveries, and committing with synchronous=FULL/,
  )
  expect(await s.unit.submit('b')).toBe('b-ok')
  expect(s.groups).toEqual([
    { items: ['a'], full: false },
    { items: ['b'], full: true },
  ])
  expect(s.held).toHaveLength(0)
  const none = setup({ walPath: undefined })
  expect(await none.unit.submit('c')).toBe('c-ok')
  expect(none.groups).toEqual([{ items: ['c'], full: true }])
  await Promise.all([s.unit.close(), none.unit.close()])
})

test('each sync is of the -wal file as it is after the commit, and no descriptor stays open between groups', async () => {
  // A mirror parked and opened again has a new -wal file (SQLite deletes it at the last close).
  const wal = path.join(tempDir(), 'x.db-wal')
  fs.writeFileSync(wal, '')
  const synced: number[] = []
  const unit = new GroupCommit<string, string>({
    name: 'test store',
    logger: createLogger({ level: 'silent' }),
    commit: (items) => items.map((i) => `${i}-ok`),
    walPath: wal,
    syncFile: (fd, done) => {
      synced.push(fs.fstatSync(fd).ino)
      done(null)
    },
  })
  const open = () =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(wal)
      } catch {
        return false
      }
    }).length
  expect(await unit.submit('a')).toBe('a-ok')
  const first = fs.statSync(wal).ino
  expect(open()).toBe(0)
  fs.rmSync(wal)
  // Another file takes the old inode's place first, so the new -wal cannot reuse it.
  const keep = path.join(path.dirname(wal), 'keep')
  fs.writeFileSync(keep, 'x')
  fs.writeFileSync(wal, '')
  expect(await unit.submit('b')).toBe('b-ok')
  expect(synced).toEqual([first, fs.statSync(wal).ino])
  expect(synced[1]).not.toBe(first)
  expect(open()).toBe(0)
  await unit.close()
})
