// The keyset walk's state machine (src/api/keyset/keyset-walk.ts), driven with answers written by
// hand: no server, no clock. The walk against the emulator is in test/integration/api/paginators.test.ts.
import { describe, expect, it } from 'vitest'
import { KeysetWalk, type WalkAnswer } from '../../../src/api/keyset/keyset-walk.js'
import { PagingStalledError } from '../../../src/api/errors.js'
import type { KeysetRow, ListMeta } from '../../../src/api/response-schemas.js'

const T0 = Date.parse('2026-03-01T10:00:00.000Z')
const iso = (ms: number) => new Date(ms).toISOString()
const row = (id: string, ms: number): KeysetRow => ({ id, updatedAt: iso(ms) })
/** `n` rows with ids `${prefix}0..`, each `stepMs` after the one before from `from`. */
const rows = (prefix: string, n: number, from: number, stepMs = 1) =>
  Array.from({ length: n }, (_, i) => row(`${prefix}${i}`, from + i * stepMs))

function answer(list: readonly KeysetRow[], meta: ListMeta = {}, date = T0 + 3_600_000): WalkAnswer {
  return { rows: list, meta, date, askedAt: T0 + 3_600_000, route: '/api/v1/jobs', target: 'GET /api/v1/jobs', status: 200 }
}

describe('KeysetWalk', () => {
  it('asks for page 1 of the whole list, and an empty answer ends the walk with no cursor', () => {
    const walk = new KeysetWalk()
    expect(walk.next()).toEqual({ page: 1, limit: 100, offset: 0, since: undefined })
    const step = walk.absorb(answer([], { total: 0 }))
    expect(step.done).toBe(true)
    expect(step.page.rows).toEqual([])
    expect(step.page.cursor).toBeUndefined()
  })

  it('moves since to the last updatedAt of each page and drops the rows at it that come again', () => {
    const walk = new KeysetWalk({ limit: 10 })
    const all = rows('j', 15, T0, 1000)
    walk.next()
    const first = walk.absorb(answer(all.slice(0, 10), { total: 15, limit: 10 }))
    expect(first.done).toBe(false)
    expect(first.page.rows).toHaveLength(10)
    expect(first.page.remaining).toBe(5)
    expect(first.page.cursor?.since).toBe(all[9]!.updatedAt)
    expect(walk.next()).toEqual({ page: 1, limit: 10, offset: 0, since: all[9]!.updatedAt })
    // `since` is inclusive: the last row comes again and is not delivered twice.
    const second = walk.absorb(answer(all.slice(9), { total: 6, limit: 10 }))
    expect(second.done).toBe(true)
    expect(second.page.rows.map((r) => r.id)).toEqual(all.slice(10).map((r) => r.id))
    expect(second.page.cursor?.since).toBe(all[14]!.updatedAt)
    expect(second.page.remaining).toBe(0)
  })

  it('steps through a tie larger than a page with each step overlapping the anchor by one row', () => {
    const walk = new KeysetWalk({ since: iso(T0) })
    const tie = rows('t', 150, T0, 0)
    walk.next()
    walk.absorb(answer(tie.slice(0, 100), { total: 150 }))
    const step = walk.next()
    expect(step).toMatchObject({ page: 2, limit: 99, offset: 99, since: iso(T0) })
    const end = walk.absorb(answer(tie.slice(99), { total: 150 }))
    expect(end.done).toBe(true)
    expect(end.page.rows.map((r) => r.id)).toEqual(tie.slice(100).map((r) => r.id))
    expect(end.page.cursor?.seenIdsAtCursor).toHaveLength(150)
  })

  it('reads a tie again from page 1 when the anchor is no longer where it was', () => {
    const walk = new KeysetWalk({ since: iso(T0) })
    const tie = rows('t', 150, T0, 0)
    walk.next()
    walk.absorb(answer(tie.slice(0, 100), { total: 150 }))
    walk.next()
    // A row before the anchor left the tie: the step's first row is not the anchor.
    const moved = walk.absorb(answer(tie.slice(100), { total: 149 }))
    expect(moved.done).toBe(false)
    expect(walk.next()).toMatchObject({ page: 1, since: iso(T0) })
  })

  it('fails with PAGING_STALLED when a route answers a later page with rows of an earlier one', () => {
    const walk = new KeysetWalk({ since: iso(T0) })
    const tie = rows('t', 150, T0, 0)
    walk.next()
    walk.absorb(answer(tie.slice(0, 100), { total: 150 }))
    walk.next()
    expect(() => walk.absorb(answer(tie.slice(0, 99), { total: 150, limit: 99 }))).toThrow(PagingStalledError)
  })

  it('says when an answer had no Date header, and then reckons the look-back from the newest row read', () => {
    const walk = new KeysetWalk({ lookbackMs: 5000 })
    walk.next()
    const step = walk.absorb(answer([row('a', T0)], { total: 1 }, Number.NaN))
    expect(step.noDate).toBe(true)
    // The row is within the look-back of the newest row read (itself): the next walk starts a margin before it.
    expect(step.page.cursor?.rereadFrom).toBe(iso(T0 - 5000))
  })

  it('a resumed walk starts where the stored cursor says and does not deliver the ids it holds again', () => {
    const cursor = { since: iso(T0), seenIdsAtCursor: ['a'], rereadFrom: iso(T0) }
    const walk = new KeysetWalk({ cursor })
    expect(walk.next().since).toBe(iso(T0))
    const step = walk.absorb(answer([row('a', T0), row('b', T0)], { total: 2 }))
    expect(step.page.rows.map((r) => r.id)).toEqual(['b'])
    expect(step.done).toBe(true)
  })

  it('refuses an answer it did not ask for', () => {
    expect(() => new KeysetWalk().absorb(answer([]))).toThrow(/without a request/)
  })
})
