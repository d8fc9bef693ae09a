// change_log's record_id is encoded in JavaScript (the record writer), in SQL (the snapshot reads)
// and decoded by the destination: the three must agree for every key, a `/` in the id included.
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { changeKeySql, decodeChangeKey, encodeChangeKey } from '../../../src/model/change-key.js'

const KEYS: string[][] = [['c_1'], ['pets', 'r_1'], ['pets', 'a/b/c'], ['pets', ''], ['weird "slug"', 'x']]

describe('the change_log key codec', () => {
  test.each(KEYS)('decode(encode(key)) is the key: %j', (...key) => {
    expect(decodeChangeKey(encodeChangeKey(key), key.length)).toEqual(key)
  })

  test("SQLite's expression over the key columns gives the record_id the writer logs", () => {
    const db = new Database(':memory:')
    db.exec('CREATE TABLE t (scope TEXT, id TEXT)')
    for (const key of KEYS.filter((k) => k.length === 2)) {
      db.prepare('DELETE FROM t').run()
      db.prepare('INSERT INTO t VALUES (?, ?)').run(...key)
      expect(
        db
          .prepare(`SELECT ${changeKeySql(['scope', 'id'], 't.')} FROM t`)
          .pluck()
          .get(),
      ).toBe(encodeChangeKey(key))
    }
    expect(
      db
        .prepare(`SELECT ${changeKeySql(['id'])} FROM t`)
        .pluck()
        .get(),
    ).toBe('x')
    db.close()
  })
})
