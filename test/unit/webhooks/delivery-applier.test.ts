import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { customObjectSink } from '../../../src/webhooks/custom-object-sink.js'
import { DeliveryApplier } from '../../../src/webhooks/delivery-applier.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

describe('DeliveryApplier, object.* events', () => {
  // Regression (demo and soak, 2026-11-23): the applier required `object` on every object.* event,
  // so every in-app custom-object deletion (spec: *.deleted carries only {id}) stayed in the inbox
  // as an error instead of marking the record deleted.
  test('object.deleted with only {id} marks the mirrored record deleted', () => {
    const applier = new DeliveryApplier(m.sqlite, RECORD_STREAMS, customObjectSink(m.sqlite))
    const snapshot = {
      id: 'r1',
      object: 'equipment',
      stage: 'active',
      data: {},
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-02T00:00:00.000Z',
    }
    expect(applier.apply('object.created', snapshot, '2026-01-03T00:00:00.000Z')).toMatchObject({ kind: 'applied' })
    expect(applier.apply('object.deleted', { id: 'r1' }, '2026-01-04T00:00:00.000Z')).toMatchObject({ kind: 'applied' })
    expect(m.sqlite.prepare('SELECT slug, deleted_at FROM custom_records WHERE id = ?').get('r1')).toEqual({
      slug: 'equipment',
      deleted_at: '2026-01-04T00:00:00.000Z',
    })
  })

  test('a snapshot without its slug is still refused with a clear error', () => {
    const applier = new DeliveryApplier(m.sqlite, RECORD_STREAMS, customObjectSink(m.sqlite))
    expect(() => applier.apply('object.updated', { id: 'r2', updatedAt: '2026-01-02T00:00:00.000Z' }, 'now')).toThrow(/no 'object' slug/)
  })
})
