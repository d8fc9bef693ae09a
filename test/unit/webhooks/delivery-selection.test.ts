// Stream selection for deliveries: `objects:<slug>` selects one custom object, so an `object.*`
// delivery for another slug is skipped (the mirror untouched), and an unselected stream's events
// are skipped whatever their kind (snapshot, deletion, status change), on a real mirror.
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { DeliveryApplier } from '../../../src/webhooks/delivery-applier.js'
import { deliverySelection } from '../../../src/webhooks/delivery-selection.js'
import { customObjectSink } from '../../../src/webhooks/custom-object-sink.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

const NOW = '2026-01-05T00:00:00.000Z'
const record = (object: string, id: string) => ({
  id,
  object,
  stage: 'active',
  data: {},
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-02T00:00:00.000Z',
})
const applier = (streams: string[]) => new DeliveryApplier(m.sqlite, RECORD_STREAMS, customObjectSink(m.sqlite), deliverySelection(streams))
const custom = () => m.sqlite.prepare('SELECT slug, id, deleted_at FROM custom_records ORDER BY slug, id').all()

describe('deliveries of unselected streams are skipped, not applied', () => {
  test('objects:<slug> applies that custom object and skips object.* for another slug, deletions included', () => {
    applier(['objects']).apply('object.created', record('inspections', 'i1'), NOW)
    const a = applier(['clients', 'objects:equipment'])
    expect(a.apply('object.created', record('equipment', 'e1'), NOW)).toMatchObject({ kind: 'applied' })
    expect(a.apply('object.updated', record('inspections', 'i2'), NOW)).toEqual({
      kind: 'skipped',
      reason: expect.stringContaining('custom object "inspections" is not selected'),
    })
    // object.deleted carries only {id}: the slug is the mirror's, and it is not selected.
    expect(a.apply('object.deleted', { id: 'i1' }, NOW)).toMatchObject({ kind: 'skipped' })
    expect(a.apply('object.deleted', { id: 'e1' }, NOW)).toMatchObject({ kind: 'applied' })
    expect(custom()).toEqual([
      { slug: 'equipment', id: 'e1', deleted_at: NOW },
      { slug: 'inspections', id: 'i1', deleted_at: null },
    ])
  })

  test.each([
    ['job.updated', { id: 'j1', updatedAt: '2026-01-02T00:00:00.000Z' }, 'stream jobs'],
    ['job.deleted', { id: 'j1' }, 'stream jobs'],
    [
      'job.status_changed',
      { job: { id: 'j1', jobStatus: 'completed' }, previousStatus: 'scheduled', newStatus: 'completed' },
      'stream jobs',
    ],
    ['invoice.paid', { id: 'v1', updatedAt: '2026-01-02T00:00:00.000Z' }, 'stream invoices'],
    ['object.created', record('equipment', 'e1'), 'stream objects'],
  ])('%s with only clients selected: skipped, with no follow-up', (event, payload, what) => {
    const a = applier(['clients'])
    expect(a.snapshotStream(event)).toBeUndefined()
    expect(a.apply(event, payload, NOW)).toEqual({ kind: 'skipped', reason: expect.stringContaining(`${what} is not selected`) })
    expect(m.sqlite.prepare('SELECT count(*) AS n FROM change_log').get()).toEqual({ n: 0 })
  })

  test('with no selection given, every stream is applied', () => {
    const all = deliverySelection(undefined)
    expect([all.stream('jobs'), all.objects, all.object('anything')]).toEqual([true, true, true])
    const some = deliverySelection(['clients', 'objects:equipment'])
    expect([
      some.stream('clients'),
      some.stream('jobs'),
      some.stream('objects'),
      some.object('equipment'),
      some.object('inspections'),
    ]).toEqual([true, false, true, true, false])
  })
})
