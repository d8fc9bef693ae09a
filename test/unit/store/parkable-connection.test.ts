// A parked mirror closes its connection (its files and page cache go with it) and opens again on
// its next use: statements, transactions and functions made before keep working on the new one
// (src/store/README.md, "Idle mirrors").
import { rmSync } from 'node:fs'
import path from 'node:path'
import { afterEach, expect, test } from 'vitest'
import { openMirror, type Mirror } from '../../../src/store/sqlite/mirror-database.js'
import { tempDir } from '../../support/temp-mirror.js'
import { filesOpen } from '../../support/open-files.js'

let mirror: Mirror | undefined
let dir: string | undefined
afterEach(async () => {
  await mirror?.close()
  mirror = undefined
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

async function parkableMirror(): Promise<Mirror & { parking: NonNullable<Mirror['parking']> }> {
  dir = tempDir()
  const m = await openMirror(path.join(dir, 'mirror.db'), { parkable: true })
  mirror = m
  if (m.parking === undefined) throw new Error('not parkable')
  return m as Mirror & { parking: NonNullable<Mirror['parking']> }
}

/** This process's descriptors open on the mirror's files. */
const filesOpenOn = (file: string): number => filesOpen((target) => target.startsWith(file))

test('a parked mirror holds no file open and reopens on its next use, with statements and transactions made before', async () => {
  const m = await parkableMirror()
  const { sqlite, parking } = m
  sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)')
  const insert = sqlite.prepare('INSERT INTO t (v) VALUES (?)')
  const count = sqlite.prepare('SELECT count(*) FROM t').pluck()
  const insertTwo = sqlite.transaction((v: string) => {
    insert.run(v)
    insert.run(v)
  })
  sqlite.function('twice', (x: number) => 2 * x)
  insert.run('a')
  expect(filesOpenOn(m.path)).toBeGreaterThanOrEqual(3)

  expect(parking.park()).toBe(true)
  expect(parking.parked).toBe(true)
  expect(filesOpenOn(m.path)).toBe(0)
  expect(sqlite.open).toBe(false)

  const reopened: number[] = []
  parking.onReopen(() => reopened.push(parking.reopens))
  insertTwo.immediate('b')
  expect(parking.parked).toBe(false)
  expect(reopened).toEqual([1])
  // The statement keeps its mode (pluck) on the new connection, and the function is there again.
  expect(count.get()).toBe(3)
  expect(sqlite.prepare('SELECT twice(21)').pluck().get()).toBe(42)
  // Uses made through ifOpen are not counted, and a parked mirror is not opened by them.
  const uses = parking.uses
  expect(parking.ifOpen(() => count.get())).toBe(3)
  expect(parking.uses).toBe(uses)
  parking.park()
  expect(parking.ifOpen(() => count.get())).toBeUndefined()
  expect(parking.parked).toBe(true)
})

test('a mirror is never parked inside a transaction nor while a statement iterates', async () => {
  const { sqlite, parking } = await parkableMirror()
  sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2)')
  sqlite.exec('BEGIN')
  sqlite.prepare('SELECT * FROM t').all()
  expect(parking.park()).toBe(false)
  sqlite.exec('COMMIT')
  const rows = sqlite.prepare('SELECT id FROM t').pluck().iterate()
  expect(rows.next().value).toBe(1)
  expect(parking.park()).toBe(false)
  expect([...rows]).toEqual([2])
  expect(parking.park()).toBe(true)
})

test('a closed mirror stays closed: a use after close() throws instead of reopening', async () => {
  const m = await parkableMirror()
  const count = m.sqlite.prepare('SELECT count(*) FROM sqlite_master').pluck()
  m.parking.park()
  await m.close()
  mirror = undefined
  expect(() => count.get()).toThrow(/not open/)
  expect(m.parking.parked).toBe(false)
})
