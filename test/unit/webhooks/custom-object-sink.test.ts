import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { customObjectSink } from '../../../src/webhooks/custom-object-sink.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeEach(async () => (m = await tempMirror()))
afterEach(() => m.dispose())

const rec = (id: string, updatedAt: string, data: Record<string, unknown>) => ({
  id,
  object: 'equipment',
  stage: 'active',
  data,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt,
})
const rows = () => m.sqlite.prepare('SELECT slug, id, stage, data, deleted_at FROM custom_records ORDER BY id').all()

describe('object.* deliveries into custom_records', () => {
  test('snapshots upsert newer-wins under their slug; an older one changes nothing', () => {
    const sink = customObjectSink(m.sqlite)
    sink.apply('object.created', rec('r1', '2026-01-02T00:00:00.000Z', { serial: 'A' }), 'now')
    sink.apply('object.updated', rec('r1', '2026-01-03T00:00:00.000Z', { serial: 'B' }), 'now')
    sink.apply('object.updated', rec('r1', '2026-01-02T12:00:00.000Z', { serial: 'old' }), 'now')
    expect(rows()).toEqual([{ slug: 'equipment', id: 'r1', stage: 'active', data: '{"serial":"B"}', deleted_at: null }])
  })

  test('object.deleted with only {id}: the slug is found in the mirror', () => {
    const sink = customObjectSink(m.sqlite)
    sink.apply('object.created', rec('r2', '2026-01-02T00:00:00.000Z', {}), 'now')
    sink.apply('object.deleted', { id: 'r2' }, '2026-01-05T00:00:00.000Z')
    expect(rows()).toEqual([expect.objectContaining({ id: 'r2', deleted_at: '2026-01-05T00:00:00.000Z' })])
    sink.apply('object.deleted', { id: 'never-seen' }, 'now')
    expect(rows()).toHaveLength(1)
  })

  test('a snapshot without its slug is an error (kept in the inbox with it)', () => {
    const sink = customObjectSink(m.sqlite)
    expect(() => sink.apply('object.updated', { id: 'r3', updatedAt: '2026-01-02T00:00:00.000Z' }, 'now')).toThrow(/no 'object' slug/)
  })
})
