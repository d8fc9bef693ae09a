import { describe, expect, test } from 'vitest'
import { EMPTY_GAP_CURSOR, planGapSweeps } from '../../../src/webhooks/delivery-gaps.js'
import type { DeliveryRecord } from '../../../src/webhooks/registration.js'

const at = (m: number) => new Date(Date.UTC(2026, 2, 1, 12, m)).toISOString()
const d = (id: string, event: string, status: string, lastAttempt: number | null, created = 0): DeliveryRecord => ({
  id,
  event,
  status,
  createdAt: at(created),
  lastAttemptAt: lastAttempt === null ? null : at(lastAttempt),
})

describe('planGapSweeps: which streams to sweep at once', () => {
  test.each([
    ['client.updated', ['clients']],
    ['client.deleted', ['clients']],
    ['job.status_changed', ['jobs']],
    ['visit.status_changed', ['visits']],
    ['invoice.paid', ['invoices']],
    ['object.stage_changed', ['objects']],
    ['estimate.created', []],
  ])('%s -> %j', (event, streams) => {
    expect(planGapSweeps([d('1', event, 'retrying', 1)], EMPTY_GAP_CURSOR).streams).toEqual(streams)
  })

  test('only retrying and failed deliveries count; streams once each, sorted', () => {
    const plan = planGapSweeps(
      [
        d('1', 'job.updated', 'success', 1),
        d('2', 'job.updated', 'pending', 1),
        d('3', 'invoice.paid', 'failed', 2),
        d('4', 'client.created', 'retrying', 3),
        d('5', 'client.updated', 'retrying', 4),
      ],
      EMPTY_GAP_CURSOR,
    )
    expect(plan.streams).toEqual(['clients', 'invoices'])
    expect(plan.missed.map((x) => x.id)).toEqual(['3', '4', '5'])
  })
})

describe('planGapSweeps: the cursor', () => {
  test('advances to the newest failure and skips what it has seen', () => {
    const first = planGapSweeps([d('1', 'job.updated', 'retrying', 5), d('2', 'client.updated', 'retrying', 3)], EMPTY_GAP_CURSOR)
    expect(first.cursor).toEqual({ since: at(5), idsAtSince: ['1'] })
    const again = planGapSweeps([d('1', 'job.updated', 'retrying', 5), d('2', 'client.updated', 'retrying', 3)], first.cursor)
    expect(again).toMatchObject({ streams: [], missed: [], cursor: first.cursor })
  })

  test('a failure at the cursor time with a new id is new (ties, like a keyset)', () => {
    const cursor = { since: at(5), idsAtSince: ['1'] }
    const plan = planGapSweeps([d('1', 'job.updated', 'retrying', 5), d('9', 'invoice.updated', 'failed', 5)], cursor)
    expect(plan.streams).toEqual(['invoices'])
    expect(plan.cursor).toEqual({ since: at(5), idsAtSince: ['1', '9'] })
  })

  test('a delivery that moves from retrying to failed at the same attempt time is not reported twice', () => {
    const first = planGapSweeps([d('1', 'job.updated', 'retrying', 5)], EMPTY_GAP_CURSOR)
    expect(planGapSweeps([d('1', 'job.updated', 'failed', 5)], first.cursor).streams).toEqual([])
  })

  test('without a last attempt the creation time counts; without any time it is always reported', () => {
    const plan = planGapSweeps([d('1', 'job.updated', 'retrying', null, 7), { id: '2', event: 'client.updated', status: 'failed' }], {
      since: at(6),
      idsAtSince: [],
    })
    expect(plan.streams).toEqual(['clients', 'jobs'])
    expect(plan.cursor).toEqual({ since: at(7), idsAtSince: ['1'] })
  })

  test('compares instants, not strings: an offset form of an older time is older', () => {
    const cursor = { since: at(30), idsAtSince: [] }
    const older = { id: '3', event: 'job.updated', status: 'retrying', lastAttemptAt: '2026-03-01T13:20:00+01:00' }
    expect(planGapSweeps([older], cursor).streams).toEqual([])
  })
})
