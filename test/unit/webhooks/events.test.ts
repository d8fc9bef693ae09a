import { describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { WEBHOOK_EVENTS, streamOfEvent } from '../../../src/webhooks/events.js'

describe('events', () => {
  test('exactly the seventeen subscribable events of the spec', () => {
    expect(WEBHOOK_EVENTS).toHaveLength(17)
    expect(new Set(WEBHOOK_EVENTS).size).toBe(17)
    expect([...WEBHOOK_EVENTS].sort()).toEqual(
      [
        'client.created',
        'client.updated',
        'client.deleted',
        'job.created',
        'job.updated',
        'job.status_changed',
        'job.deleted',
        'visit.status_changed',
        'visit.updated',
        'invoice.created',
        'invoice.updated',
        'invoice.paid',
        'invoice.deleted',
        'object.created',
        'object.updated',
        'object.stage_changed',
        'object.deleted',
      ].sort(),
    )
  })

  test.each([
    ['client.deleted', 'clients'],
    ['job.status_changed', 'jobs'],
    ['visit.updated', 'visits'],
    ['invoice.paid', 'invoices'],
    ['object.stage_changed', 'objects'],
    ['invoice.sent', undefined],
    ['visit.created', undefined],
    ['', undefined],
  ])('%s belongs to %s', (event, stream) => {
    expect(streamOfEvent(event)).toBe(stream)
  })

  test('every event a connector applies is subscribable and maps back to that connector', () => {
    for (const s of RECORD_STREAMS) {
      for (const event of [...s.snapshotEvents, ...s.deletions.events]) expect(streamOfEvent(event)).toBe(s.name)
    }
  })
})
