import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let m: TempMirror
beforeAll(async () => {
  m = await tempMirror()
  const client = m.sqlite.prepare(
    `INSERT INTO clients (id, properties, deleted_at, updated_at, raw, synced_at) VALUES (?, ?, ?, 't', '{}', 't')`,
  )
  client.run(
    'c1',
    JSON.stringify([
      { id: 'f1', value: 'A-1' },
      { id: 'f2', value: '["mon","tue"]', name: 'ignored', type: 'ignored' },
    ]),
    null,
  )
  client.run('c2', JSON.stringify({ f1: 'B-2', f2: { value: '["fri"]' } }), null)
  client.run('c3', JSON.stringify([{ id: 'f1', value: 'gone' }]), 't')
  client.run('c4', null, null)
  m.sqlite.prepare(`INSERT INTO client_fields (id, name, label, raw, synced_at) VALUES ('f1', 'gateCode', 'Gate code', '{}', 't')`).run()
})
afterAll(() => m.dispose())

describe('client_properties', () => {
  test('both payload shapes (array of {id, value}, object keyed by id); labels joined; deleted clients left out', () => {
    expect(
      m.sqlite.prepare('SELECT client_id, field_id, field_label, value FROM client_properties ORDER BY client_id, field_id').all(),
    ).toEqual([
      { client_id: 'c1', field_id: 'f1', field_label: 'Gate code', value: 'A-1' },
      { client_id: 'c1', field_id: 'f2', field_label: null, value: '["mon","tue"]' },
      { client_id: 'c2', field_id: 'f1', field_label: 'Gate code', value: 'B-2' },
      { client_id: 'c2', field_id: 'f2', field_label: null, value: '["fri"]' },
    ])
  })
})
