// Conformance: spec "Custom object definition and record", "Endpoints, Custom objects",
// "Custom-object stage" and the custom-object messages of "Errors".
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot({ counts: { customRecords: 130 } })
})
afterAll(() => emu.close())

const businessClient = () => firstLive(emu, 'clients', (c) => c.clientType === 'Commercial')
const individualClient = () => firstLive(emu, 'clients', (c) => c.clientType === 'Residential')

describe('Custom objects: discovery and schema', () => {
  test('Custom objects: discovery is sorted by slug, unpaged, meta.total is the length; disabled objects omitted', async () => {
    const r = await emu.get('/api/v1/objects')
    expect(r.body.data.map((d: any) => d.slug)).toEqual(['equipment', 'inspections'])
    expect(r.body.meta).toEqual({ total: 2 })
    expect(Object.keys(r.body.data[1])).toEqual(['slug', 'nameSingular', 'namePlural', 'isChildObject', 'parentObjectSlug', 'schemaUrl'])
    expect(r.body.data[1]).toMatchObject({ isChildObject: true, parentObjectSlug: 'equipment' })
  })
  test('Custom objects: the schema has object, fields (text, select, relation descriptors) and the pipeline', async () => {
    const s = (await emu.get('/api/v1/objects/equipment/schema')).body.data
    expect(s.object).toEqual({ slug: 'equipment', nameSingular: 'Equipment', namePlural: 'Equipment' })
    expect(new Set(s.fields.map((f: any) => f.type))).toEqual(new Set(['text', 'select', 'relation']))
    for (const f of s.fields)
      expect(Object.keys(f)).toEqual(['name', 'id', 'label', 'type', 'required', 'readOnly', 'system', 'options', 'relation'])
    expect(s.fields.find((f: any) => f.name === 'ownerId').relation).toEqual({
      targetObject: 'client',
      relationshipType: 'MANY_TO_ONE',
      multi: false,
    })
    expect(s.pipeline).toMatchObject({ fieldName: 'status', stages: expect.any(Array), transitions: expect.any(Object) })
    expect(Object.keys(s.pipeline.stages[0])).toEqual(['value', 'label', 'order', 'isFinal'])
  })
  test('Custom objects: the client schema is accepted (client custom-field ids)', async () => {
    const s = await emu.get('/api/v1/objects/client/schema')
    expect(s.status).toBe(200)
    expect(s.body.data.fields[0].id).toMatch(/^[a-f0-9]{24}$/)
  })
  test.each(['job', 'visit', 'invoice', 'estimate', 'request', 'task'])(
    "Errors: '%s' is a built-in module, not a custom object (400)",
    async (slug) => {
      const r = await emu.get(`/api/v1/objects/${slug}/schema`)
      expect(r.status).toBe(400)
      expect(r.body.message).toBe(`'${slug}' is a built-in module, not a custom object. Use /api/v1/${slug}s instead.`)
    },
  )
  test('Errors: an unknown slug gives 404 No object with slug', async () => {
    const r = await emu.get('/api/v1/objects/widgets')
    expect(r.status).toBe(404)
    expect(r.body.message).toBe("No object with slug 'widgets' on this account.")
  })
  test('Custom objects: a disabled object stays readable and writable', async () => {
    expect((await emu.get('/api/v1/objects/legacy_assets')).status).toBe(200)
    expect((await emu.call('POST', '/api/v1/objects/legacy_assets', { data: { label: 'x' } })).status).toBe(201)
  })
})

describe('Custom objects: list', () => {
  test('Custom objects list: default limit 50, id ascending, meta.next {cursor, limit}, null on the last page; a walk sees every record once', async () => {
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const r: any = await emu.get(`/api/v1/objects/equipment${cursor === null ? '' : `?cursor=${cursor}`}`)
      if (pages === 0) expect(r.body.data).toHaveLength(50)
      seen.push(...r.body.data.map((x: any) => x.id))
      cursor = r.body.meta.next === null ? null : r.body.meta.next.cursor
      if (r.body.meta.next !== null) expect(r.body.meta.next.limit).toBe(50)
      pages++
    } while (cursor !== null)
    expect(seen).toEqual([...seen].sort())
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.length).toBeGreaterThanOrEqual(130)
  })
  test.each([
    ['0', 1],
    ['500', 100],
    ['abc', 50],
  ])('Custom objects list: limit=%s gives pages of %i', async (limit, n) => {
    expect((await emu.get(`/api/v1/objects/equipment?limit=${limit}`)).body.data).toHaveLength(n)
  })
  test.each(['abc', '12345', 'zzzzzzzzzzzzzzzzzzzzzzzz'])('Errors: an invalid cursor "%s" gives 400 Invalid cursor', async (c) => {
    const r = await emu.get(`/api/v1/objects/equipment?cursor=${c}`)
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(new RegExp(`^Invalid cursor "${c}"`))
    expect(r.body.message).toContain('paging.next_cursor')
  })
  test('Custom objects list: updated_since is inclusive; unparseable is ignored', async () => {
    const all = (await emu.get('/api/v1/objects/equipment?limit=100')).body.data
    const pivot = [...all].sort((a: any, b: any) => (a.updatedAt < b.updatedAt ? -1 : 1))[40].updatedAt
    const r = await emu.get(`/api/v1/objects/equipment?limit=100&updated_since=${pivot}`)
    expect(r.body.data.every((x: any) => x.updatedAt >= pivot)).toBe(true)
    expect(r.body.data.some((x: any) => x.updatedAt === pivot)).toBe(true)
    expect((await emu.get('/api/v1/objects/equipment?limit=100&updated_since=garbage')).body.data).toHaveLength(100)
  })
  test('Custom objects list: stage filter; status is an alias; stage wins when both', async () => {
    const a = (await emu.get('/api/v1/objects/equipment?limit=100&stage=retired')).body.data
    expect(a.length).toBeGreaterThan(0)
    expect(a.every((x: any) => x.stage === 'retired')).toBe(true)
    expect((await emu.get('/api/v1/objects/equipment?limit=100&status=retired')).body.data).toEqual(a)
    expect((await emu.get('/api/v1/objects/equipment?limit=100&stage=retired&status=active')).body.data).toEqual(a)
  })
  test('Custom objects list: any other key is an exact, case-sensitive match on data; an empty value is skipped', async () => {
    const hvac = (await emu.get('/api/v1/objects/equipment?limit=100&category=hvac')).body.data
    expect(hvac.length).toBeGreaterThan(0)
    expect(hvac.every((x: any) => x.data.category === 'hvac')).toBe(true)
    expect((await emu.get('/api/v1/objects/equipment?limit=100&category=HVAC')).body.data).toEqual([])
    expect((await emu.get('/api/v1/objects/equipment?limit=100&category=')).body.data).toHaveLength(100)
  })
  test('Errors: unknown filter fields give 400 naming all of them', async () => {
    const r = await emu.get('/api/v1/objects/equipment?colour=red&Category=hvac')
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/^Unknown filter field\(s\): colour, Category\./)
  })
})

describe('Custom objects: records', () => {
  test('Custom objects: POST needs data (400 without it)', async () => {
    const r = await emu.call('POST', '/api/v1/objects/equipment', { status: 'active' })
    expect(r.status).toBe(400)
    expect(r.body.message).toContain('data')
  })
  test('Custom objects: create answers 201; starts in the first stage by order; stage mirrored into data.status; auto display id; relation name mirror', async () => {
    const owner = await businessClient()
    const r = await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'Boiler', ownerId: owner.id } })
    expect(r.status).toBe(201)
    const rec = r.body.data
    expect(Object.keys(rec)).toEqual(['id', 'object', 'stage', 'data', 'createdAt', 'updatedAt'])
    expect(rec.stage).toBe('active')
    expect(rec.data).toMatchObject({
      name: 'Boiler',
      ownerId: owner.id,
      ownerName: `${owner.firstName} ${owner.lastName}`,
      status: 'active',
      customId: expect.stringMatching(/^EQ-\d+$/),
      customIdCounter: expect.any(Number),
    })
    expect((await emu.get(`/api/v1/objects/equipment/${rec.id}`)).body.data).toEqual(rec)
  })
  test('Custom objects: on create the stage is read from status only (stage is ignored)', async () => {
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'A' }, status: 'maintenance' })).body.data.stage).toBe(
      'maintenance',
    )
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'B' }, stage: 'maintenance' })).body.data.stage).toBe(
      'active',
    )
  })
  test('Custom-object stage: transitions are advisory; an undefined stage value is accepted (200)', async () => {
    const rec = (await emu.call('POST', '/api/v1/objects/inspections', { data: { title: 'T' } })).body.data
    const r = await emu.call('PATCH', `/api/v1/objects/inspections/${rec.id}`, { stage: 'nonexistent' })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ stage: 'nonexistent', data: { status: 'nonexistent' } })
  })
  test('Custom-object stage: writing data.status moves the stage', async () => {
    const rec = (await emu.call('POST', '/api/v1/objects/inspections', { data: { title: 'T' } })).body.data
    expect((await emu.call('PATCH', `/api/v1/objects/inspections/${rec.id}`, { data: { status: 'passed' } })).body.data.stage).toBe(
      'passed',
    )
  })
  test('Custom objects PATCH: merges data (omitted kept, null sets null); stage wins over status', async () => {
    const rec = (await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'M', serialNumber: 'S1', location: 'Roof' } })).body
      .data
    const u = (
      await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { location: null }, stage: 'retired', status: 'maintenance' })
    ).body.data
    expect(u.data).toMatchObject({ name: 'M', serialNumber: 'S1', location: null })
    expect(u.stage).toBe('retired')
  })
  test('Custom objects PATCH: required-field validation runs on the merged result', async () => {
    const rec = (await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'R' } })).body.data
    expect((await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { name: null } })).status).toBe(400)
    expect((await emu.call('POST', '/api/v1/objects/equipment', { data: { serialNumber: 'x' } })).status).toBe(400)
  })
  test('Custom objects PATCH: a misspelt top-level data key changes nothing yet returns 200', async () => {
    const rec = (await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'Typo' } })).body.data
    const r = await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { date: { name: 'changed' } })
    expect(r.status).toBe(200)
    expect(r.body.data.data.name).toBe('Typo')
  })
  test('Custom objects: unknown data keys give 400 Unknown field(s) in data; customId is not tolerated', async () => {
    const r = await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'x', colour: 'red', customId: 'EQ-1' } })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe('Unknown field(s) in data: colour, customId')
  })
  test('Custom objects: tolerated keys are customIdCounter, __-prefixed keys and a <base>Name mirror', async () => {
    const owner = await businessClient()
    const r = await emu.call('POST', '/api/v1/objects/equipment', {
      data: { name: 'x', customIdCounter: 9, __ui: 1, ownerId: owner.id, ownerName: 'whatever' },
    })
    expect(r.status).toBe(201)
  })
  test('Custom objects: relation input forms normalise to ids; multi relations are arrays; single keeps the first id', async () => {
    const equip = (await emu.get('/api/v1/objects/equipment?limit=2')).body.data
    const team = (await emu.get('/api/teams', { key: null, bearer: emu.apiKey })).body.data.team.map((m: any) => m.id)
    const forms: [unknown, unknown][] = [
      [{ $oid: equip[0].id }, equip[0].id],
      [{ id: equip[0].id }, equip[0].id],
      [{ _id: equip[0].id }, equip[0].id],
      [{ recordId: equip[0].id }, equip[0].id],
      [[equip[1].id, equip[0].id], equip[1].id],
      [`${equip[0].id},${equip[1].id}`, equip[0].id],
      [null, null],
    ]
    for (const [input, stored] of forms) {
      const rec = (
        await emu.call('POST', '/api/v1/objects/inspections', {
          data: { title: 't', equipmentId: input, inspectorIds: `${team[0]},${team[1]}` },
        })
      ).body.data
      expect(rec.data.equipmentId).toEqual(stored)
      expect(rec.data.inspectorIds).toEqual([team[0], team[1]])
    }
  })
  test('Custom objects: a relation restricted to business clients rejects an individual client', async () => {
    const person = await individualClient()
    const r = await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'x', ownerId: person.id } })
    expect(r.status).toBe(400)
    expect(r.body.message).toBe('Owner: client must be business (got individual)')
  })
  test('Custom objects: validation messages are localised from Accept-Language', async () => {
    const r = await emu.call(
      'POST',
      '/api/v1/objects/equipment',
      { data: { serialNumber: 'x' } },
      { headers: { 'accept-language': 'fr-FR' } },
    )
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/obligatoire/)
  })
  test('Errors: GET with an unknown slug gives 404 Record not found. (the slug is not verified there)', async () => {
    const rec = await firstLive(emu, 'objects/equipment')
    const r = await emu.get(`/api/v1/objects/widgets/${rec.id}`)
    expect(r.status).toBe(404)
    expect(r.body.message).toBe('Record not found.')
  })
  test('Custom objects: a soft-deleted record is excluded from lists with no tombstone and 404 afterwards', async () => {
    const rec = await firstLive(emu, 'objects/equipment')
    await emu.control('POST', '/mutate', { resource: 'objects/equipment', op: 'delete', id: rec.id })
    expect((await emu.get(`/api/v1/objects/equipment/${rec.id}`)).status).toBe(404)
    expect((await emu.get('/api/v1/objects/equipment?limit=100')).body.data.map((x: any) => x.id)).not.toContain(rec.id)
    expect((await emu.call('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { name: 'x' } })).status).toBe(404)
  })
  test('Custom objects: internal columns (linkedRecords, isDeleted, createdBy...) are never returned', async () => {
    const r = await emu.call('POST', '/api/v1/objects/equipment', { data: { name: 'L' }, linkedRecords: [{ id: 'x' }] })
    expect(JSON.stringify(r.body)).not.toMatch(/linkedRecords|isDeleted|deletedAt|createdBy|automationSuppressedAt/)
  })
})

describe('Custom objects: upsert', () => {
  test('Upsert: creates with 201 meta.created true (the key written into data), then updates with 200 meta.created false', async () => {
    const a = await emu.call('PUT', `/api/v1/objects/equipment/by/serialNumber/${encodeURIComponent('SN/UP 1')}`, { data: { name: 'Up' } })
    expect(a.status).toBe(201)
    expect(a.body.meta).toEqual({ created: true })
    expect(a.body.data.data.serialNumber).toBe('SN/UP 1')
    const b = await emu.call('PUT', `/api/v1/objects/equipment/by/serialNumber/${encodeURIComponent('SN/UP 1')}`, {
      data: { location: 'Attic' },
      stage: 'maintenance',
    })
    expect(b.status).toBe(200)
    expect(b.body.meta).toEqual({ created: false })
    expect(b.body.data).toMatchObject({ id: a.body.data.id, stage: 'maintenance', data: { name: 'Up', location: 'Attic' } })
  })
  test('Errors: upsert key matching several records gives 409', async () => {
    for (const n of ['1', '2']) await emu.call('POST', '/api/v1/objects/equipment', { data: { name: `Dup ${n}`, location: 'Shared-Key' } })
    const r = await emu.call('PUT', '/api/v1/objects/equipment/by/location/Shared-Key', { data: {} })
    expect(r.status).toBe(409)
    expect(r.body.message).toBe('upsert key matched more than one record')
  })
  test('Upsert: a soft-deleted holder of the key neither blocks nor is revived', async () => {
    const held = (await emu.call('PUT', '/api/v1/objects/equipment/by/serialNumber/SN-DEL', { data: { name: 'Old' } })).body.data
    await emu.control('POST', '/mutate', { resource: 'objects/equipment', op: 'delete', id: held.id })
    const r = await emu.call('PUT', '/api/v1/objects/equipment/by/serialNumber/SN-DEL', { data: { name: 'New' } })
    expect(r.status).toBe(201)
    expect(r.body.data.id).not.toBe(held.id)
  })
})
