// Retention of change_log with consumers (src/store/repositories/change-log-consumers.ts): rows go once they are
// old enough and every consumer has read them; a consumer further behind than the hold stops
// holding them back.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { ChangeLogConsumers, consumerLag, lastChangeSeq, pruneHorizon } from '../../../src/store/repositories/change-log-consumers.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

const DAY = 86_400_000
const NOW = Date.parse('2026-03-01T00:00:00.000Z')
const daysAgo = (d: number) => new Date(NOW - d * DAY).toISOString()

let m: TempMirror
beforeEach(async () => {
  m = await tempMirror()
  const insert = m.sqlite.prepare(
    `INSERT INTO change_log (table_name, record_id, op, updated_at, changed_at) VALUES ('jobs', ?, 'upsert', NULL, ?)`,
  )
  // Seqs 1 to 10, written 100 down to 10 days ago.
  for (let i = 1; i <= 10; i++) insert.run(`j${i}`, daysAgo(110 - i * 10))
})
afterEach(() => m.dispose())

describe('pruneHorizon', () => {
  test('without consumers: everything older than changeLogDays; "off" keeps all', () => {
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 45, changeLogHoldDays: 'off' })).toBe(6)
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 'off', changeLogHoldDays: 'off' })).toBeUndefined()
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 200, changeLogHoldDays: 'off' })).toBeUndefined()
  })

  test('a consumer holds back what it has not read, until it is further behind than the hold', () => {
    const consumers = new ChangeLogConsumers(m.sqlite)
    consumers.add('etl', 'user', daysAgo(0), 2)
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 45, changeLogHoldDays: 'off' })).toBe(2)
    // Its next unread change (seq 3) is 80 days old: past a 60-day hold it holds nothing back.
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 45, changeLogHoldDays: 60 })).toBe(6)
    consumers.ack('etl', 9, daysAgo(0))
    expect(pruneHorizon(m.sqlite, NOW, { changeLogDays: 45, changeLogHoldDays: 'off' })).toBe(6)
    // Acknowledging never moves a consumer back.
    consumers.ack('etl', 1, daysAgo(0))
    expect(consumers.get('etl')?.seq).toBe(9)
  })

  test('lag of a consumer in changes and seconds; the last seq survives pruning everything', () => {
    const consumers = new ChangeLogConsumers(m.sqlite)
    consumers.add('etl', 'user', daysAgo(0), 8)
    expect(consumerLag(m.sqlite, 'etl', NOW)).toMatchObject({ seq: 8, lagChanges: 2, lagSeconds: 20 * 86_400 })
    consumers.ack('etl', 10, daysAgo(0))
    expect(consumerLag(m.sqlite, 'etl', NOW)).toMatchObject({ lagChanges: 0, lagSeconds: 0 })
    m.sqlite.exec(`DELETE FROM change_log`)
    expect(lastChangeSeq(m.sqlite)).toBe(10)
    expect(() => consumers.add('bad name!', 'user', daysAgo(0))).toThrow(/consumer name "bad name!" must be/)
  })
})
