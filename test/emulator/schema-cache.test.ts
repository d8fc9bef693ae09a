// Conformance: spec "Custom objects" schema route ("Definitions are cached for five minutes per
// instance; pipeline stages are read live"), Errors (`Unknown field(s) in data`, "definitions are
// cached for five minutes") and Limits ("Custom-schema cache 5 minutes"). The control API's field
// changes flush the cache unless `cached: true`, so these cases ask for it.
import { afterEach, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

const T0 = Date.parse('2026-03-10T12:00:00.000Z')
const MINUTE = 60_000

let emu: Emu
afterEach(() => emu.close())

const fieldNames = async (slug: string): Promise<string[]> =>
  (await emu.get(`/api/v1/objects/${slug}/schema`)).body.data.fields.map((f: any) => f.name)
const advance = (ms: number) => emu.control('POST', '/clock', { advanceMs: ms })

describe('Custom objects: the five-minute schema cache', () => {
  test('Limits: a cached field addition shows in the schema and in data validation only when the entry expires', async () => {
    emu = await boot({ now: () => T0 })
    expect(await fieldNames('equipment')).not.toContain('warrantyEnds') // fills the entry at T0
    const added = await emu.control('POST', '/objects/equipment/fields', { name: 'warrantyEnds', type: 'text', cached: true })
    expect(added.visibleFrom).toBe(new Date(T0 + 5 * MINUTE).toISOString())
    await advance(5 * MINUTE - 1)
    expect(await fieldNames('equipment')).not.toContain('warrantyEnds')
    const refused = await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'n', warrantyEnds: '2031' } })
    expect(refused.status).toBe(400)
    expect(refused.body.message).toBe('Unknown field(s) in data: warrantyEnds')
    expect((await emu.get('/api/v1/objects/equipment?warrantyEnds=2031')).status).toBe(400)
    await advance(1)
    expect(await fieldNames('equipment')).toContain('warrantyEnds')
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'n', warrantyEnds: '2031' } })).status).toBe(201)
    expect((await emu.get('/api/v1/objects/equipment?warrantyEnds=2031')).body.data).toHaveLength(1)
  })

  test('Limits: the entry ages from when it was filled, not from the change', async () => {
    emu = await boot({ now: () => T0 })
    await fieldNames('equipment')
    await advance(3 * MINUTE)
    await emu.control('POST', '/objects/equipment/fields', { name: 'late', cached: true })
    await advance(2 * MINUTE)
    expect(await fieldNames('equipment')).toContain('late')
  })

  test('Errors: a cached removal keeps the field accepted by PATCH and upsert until expiry, then 400', async () => {
    emu = await boot({ now: () => T0 })
    const rec = await firstLive(emu, 'objects/equipment')
    await emu.control('POST', '/objects/equipment/fields/remove', { name: 'location', cached: true })
    expect((await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { location: 'roof' } })).status).toBe(200)
    expect(
      (await emu.call('PUT', '/api/v1/objects/equipment/by/serialNumber/SN-CACHE', { data: { name: 'u', location: 'attic' } })).status,
    ).toBe(201)
    await advance(5 * MINUTE)
    const r = await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { location: 'roof' } })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe('Unknown field(s) in data: location')
    expect(await fieldNames('equipment')).not.toContain('location')
  })

  test('Custom objects: pipeline stages are read live while the field definitions are cached', async () => {
    emu = await boot({ now: () => T0 })
    await emu.control('POST', '/objects/equipment/stages', { value: 'quarantined', cached: true })
    const s = (await emu.get('/api/v1/objects/equipment/schema')).body.data
    expect(s.pipeline.stages.map((st: any) => st.value)).toContain('quarantined')
    // The pipeline field's options are a field definition: they follow the cache.
    expect(s.fields.find((f: any) => f.name === 'status').options.map((o: any) => o.value)).not.toContain('quarantined')
    await advance(5 * MINUTE)
    const later = (await emu.get('/api/v1/objects/equipment/schema')).body.data
    expect(later.fields.find((f: any) => f.name === 'status').options.map((o: any) => o.value)).toContain('quarantined')
  })

  test('Custom objects: a cached select option is refused in data until expiry', async () => {
    emu = await boot({ now: () => T0 })
    await emu.control('POST', '/objects/equipment/fields/options', { name: 'category', value: 'solar', cached: true })
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'p', category: 'solar' } })).status).toBe(400)
    await advance(5 * MINUTE)
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'p', category: 'solar' } })).status).toBe(201)
  })

  test('control: field changes are visible at once by default, and schema-cache/flush ends a held entry', async () => {
    emu = await boot({ now: () => T0 })
    await fieldNames('inspections')
    await emu.control('POST', '/objects/inspections/fields', { name: 'now_visible' })
    expect(await fieldNames('inspections')).toContain('now_visible')
    await emu.control('POST', '/objects/inspections/fields', { name: 'held', cached: true })
    expect(await fieldNames('inspections')).not.toContain('held')
    await emu.control('POST', '/objects/inspections/schema-cache/flush')
    expect(await fieldNames('inspections')).toContain('held')
    await emu.control('POST', '/objects/client/fields', { name: 'heldToo', cached: true })
    expect(await fieldNames('client')).not.toContain('heldToo')
    await emu.control('POST', '/schema-cache/flush')
    expect(await fieldNames('client')).toContain('heldToo')
  })

  test('control: cached must be a boolean', async () => {
    emu = await boot({ now: () => T0 })
    const r = await emu.call('POST', '/__emulator/objects/equipment/fields', { name: 'x', cached: 'yes' }, { key: null })
    expect(r.status).toBe(400)
    expect(await fieldNames('equipment')).not.toContain('x')
  })
})
