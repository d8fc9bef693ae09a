// Conformance: spec "Client", "Job" (create and update contracts), Conventions 7, soft deletes.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe('Client', () => {
  test('Client: create answers the client with id (24 hex), recordId (uuid), status and ms-precision UTC timestamps', async () => {
    const r = await emu.call('POST', '/api/v1/clients', {
      firstName: 'Ada',
      lastName: 'Lovelace',
      email: 'ada@example.com',
      clientType: 'Commercial',
      stage: 'Won',
    })
    expect(r.status).toBe(200)
    const c = r.body.data
    expect(c.id).toMatch(/^[a-f0-9]{24}$/)
    expect(c.recordId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(c.createdAt).toMatch(ISO_MS)
    expect(c.updatedAt).toBe(c.createdAt)
    expect(c).toMatchObject({ firstName: 'Ada', email: 'ada@example.com', stage: 'Won', status: expect.any(String) })
    expect((await emu.get(`/api/v1/clients/${c.id}`)).body.data).toEqual(c)
  })

  const badCreates: [string, unknown][] = [
    ['neither firstName nor email', { lastName: 'Only' }],
    ['an unknown key (named)', { firstName: 'A', favouriteColour: 'red' }],
    ['status is a response field', { firstName: 'A', status: 'active' }],
    ['isDeleted', { firstName: 'A', isDeleted: true }],
    ['a stage outside the account pipeline', { firstName: 'A', stage: 'Lead' }],
    ['a clientType outside Residential/Commercial', { firstName: 'A', clientType: 'Government' }],
    ['an invalid email', { email: 'not-an-email' }],
    ['an earlier-revision address key (zip)', { firstName: 'A', propertyAddress: { zip: '78701' } }],
    ['a property with an unknown field id', { firstName: 'A', properties: [{ id: 'aaaaaaaaaaaaaaaaaaaaaaaa', value: 'x' }] }],
  ]
  test.each(badCreates)('Client / Conventions 7: create with %s gives 400', async (_n, body) => {
    const r = await emu.call('POST', '/api/v1/clients', body)
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ success: false, message: expect.any(String), error: expect.any(String) })
  })
  test('Conventions 7: the 400 names the offending key', async () => {
    const r = await emu.call('POST', '/api/v1/clients', { firstName: 'A', favouriteColour: 'red' })
    expect(r.body.message).toContain('favouriteColour')
  })
  test('Client: email is not unique; a retried create makes a second client', async () => {
    const a = await emu.call('POST', '/api/v1/clients', { email: 'twice@example.com' })
    const b = await emu.call('POST', '/api/v1/clients', { email: 'twice@example.com' })
    expect(a.body.data.id).not.toBe(b.body.data.id)
  })
  test.each(['status', 'isDeleted', 'deletedAt'])('Client: sending %s on update gives 400', async (k) => {
    const c = await firstLive(emu, 'clients')
    expect((await emu.call('PUT', `/api/v1/clients/${c.id}`, { [k]: null })).status).toBe(400)
  })
  test('Client: properties merge by field id; unmentioned kept; value null clears; name/type tolerated; object form accepted', async () => {
    const schema = (await emu.get('/api/v1/objects/client/schema')).body.data
    const [gate, referral, days] = schema.fields.map((f: any) => f.id)
    const c = (
      await emu.call('POST', '/api/v1/clients', {
        firstName: 'P',
        properties: [
          { id: gate, value: '1234', name: 'Gate code', type: 'text' },
          { id: referral, value: 'google' },
        ],
      })
    ).body.data
    expect(c.properties).toEqual([
      { id: gate, value: '1234' },
      { id: referral, value: 'google' },
    ])
    const u = (await emu.call('PUT', `/api/v1/clients/${c.id}`, { properties: { [gate]: null, [days]: '["mon","tue"]' } })).body.data
    expect(u.properties).toEqual([
      { id: referral, value: 'google' },
      { id: days, value: '["mon","tue"]' },
    ])
  })
  test('Client: update is partial and moves updatedAt to the write time', async () => {
    const c = await firstLive(emu, 'clients')
    await emu.control('POST', '/clock', { freezeAt: '2031-05-05T05:05:05.555Z' })
    const u = (await emu.call('PUT', `/api/v1/clients/${c.id}`, { notes: 'partial' })).body.data
    await emu.control('POST', '/clock', { freezeAt: null })
    expect(u).toEqual({ ...c, notes: 'partial', updatedAt: '2031-05-05T05:05:05.555Z', deleted: undefined })
  })
  test('Client: a deleted client is soft-deleted: hidden from lists, 404 NOT_FOUND on GET and PUT, kept in state', async () => {
    const c = (await emu.call('POST', '/api/v1/clients', { firstName: 'Gone' })).body.data
    expect((await emu.call('DELETE', `/api/v1/clients/${c.id}`)).status).toBe(200)
    expect((await emu.get(`/api/v1/clients/${c.id}`)).status).toBe(404)
    const put = await emu.call('PUT', `/api/v1/clients/${c.id}`, { notes: 'x' })
    expect(put.status).toBe(404)
    expect(put.body.code).toBe('NOT_FOUND')
    expect((await emu.get('/api/v1/clients?limit=100&sort=createdAt:desc')).body.data.map((x: any) => x.id)).not.toContain(c.id)
    expect((await emu.control('GET', '/state/clients')).find((x: any) => x.id === c.id).deleted).toBe(true)
  })
  test('Client: deleting a client keeps its jobs and invoices', async () => {
    const j = await firstLive(emu, 'jobs')
    await emu.call('DELETE', `/api/v1/clients/${j.clientId}`)
    expect((await emu.get(`/api/v1/jobs/${j.id}`)).status).toBe(200)
  })
})

describe('Job', () => {
  const client = async () => (await emu.call('POST', '/api/v1/clients', { firstName: 'Jo', lastName: 'Bs' })).body.data
  test('Job: create defaults: status scheduled, type one-off, money 0, no visits, clientName denormalised', async () => {
    const c = await client()
    const r = await emu.call('POST', '/api/v1/jobs', { clientId: c.id, jobNumber: 'ABC123' })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({
      jobNumber: 'ABC123',
      clientId: c.id,
      clientName: 'Jo Bs',
      jobStatus: 'scheduled',
      jobType: 'one-off',
      subTotal: 0,
      discount: 0,
      tax: 0,
      total: 0,
      visits: [],
    })
  })
  test('Job: scheduleLater true with no status gives draft', async () => {
    const c = await client()
    expect((await emu.call('POST', '/api/v1/jobs', { clientId: c.id, scheduleLater: true })).body.data.jobStatus).toBe('draft')
  })
  test('Job: create aliases type/status and notes work; money stored exactly as sent', async () => {
    const c = await client()
    const j = (
      await emu.call('POST', '/api/v1/jobs', {
        clientId: c.id,
        type: 'recurring',
        status: 'in-progress',
        notes: 'n',
        subTotal: 10,
        tax: 99,
        total: 1,
      })
    ).body.data
    expect(j).toMatchObject({ jobType: 'recurring', jobStatus: 'in-progress', notes: 'n', subTotal: 10, tax: 99, total: 1 })
  })
  const badCreates: [string, (c: string) => unknown][] = [
    ['no clientId', () => ({ jobNumber: 'X1' })],
    ['lineItems', (c) => ({ clientId: c, lineItems: [] })],
    ['visits', (c) => ({ clientId: c, visits: [] })],
    ['a title (jobs have none)', (c) => ({ clientId: c, title: 'Fix' })],
    ['an earlier-schema key (jobItems)', (c) => ({ clientId: c, jobItems: [] })],
    ['a status label instead of a key', (c) => ({ clientId: c, jobStatus: 'In Progress' })],
    ['a type outside one-off/recurring', (c) => ({ clientId: c, type: 'multi-day' })],
    ['targetObjectSlug without targetRecordId', (c) => ({ clientId: c, targetObjectSlug: 'equipment' })],
    [
      'a target record that does not exist',
      (c) => ({ clientId: c, targetObjectSlug: 'equipment', targetRecordId: 'aaaaaaaaaaaaaaaaaaaaaaaa' }),
    ],
  ]
  test.each(badCreates)('Job create contract: %s gives 400', async (_n, body) => {
    const c = await client()
    expect((await emu.call('POST', '/api/v1/jobs', body(c.id))).status).toBe(400)
  })
  test('Job: a target custom-object record links when both keys are valid', async () => {
    const c = await client()
    const rec = (await emu.get('/api/v1/objects/equipment?limit=1')).body.data[0]
    expect((await emu.call('POST', '/api/v1/jobs', { clientId: c.id, targetObjectSlug: 'equipment', targetRecordId: rec.id })).status).toBe(
      200,
    )
  })
  test('Errors: a duplicate jobNumber gives 409', async () => {
    const c = await client()
    await emu.call('POST', '/api/v1/jobs', { clientId: c.id, jobNumber: 'DUP9' })
    expect((await emu.call('POST', '/api/v1/jobs', { clientId: c.id, jobNumber: 'DUP9' })).status).toBe(409)
  })
  const badUpdates = ['clientId', 'jobNumber', 'targetObjectSlug', 'targetRecordId', 'visits', 'type', 'status']
  test.each(badUpdates)('Job update contract: %s gives 400', async (k) => {
    const j = await firstLive(emu, 'jobs')
    expect((await emu.call('PUT', `/api/v1/jobs/${j.id}`, { [k]: 'x' })).status).toBe(400)
  })
  test('Job update contract: jobStatus with a pipeline key moves the status; notes is an alias of internalNotes', async () => {
    const j = await firstLive(emu, 'jobs', (x) => x.jobStatus !== 'on-hold')
    const u = (await emu.call('PUT', `/api/v1/jobs/${j.id}`, { jobStatus: 'on-hold', notes: 'paused by customer' })).body.data
    expect(u).toMatchObject({ jobStatus: 'on-hold', notes: 'paused by customer' })
    expect((await emu.call('PUT', `/api/v1/jobs/${j.id}`, { internalNotes: 'again' })).body.data.notes).toBe('again')
  })
  test('Job: GET includes the visits array, each with id and visitStatus', async () => {
    const j = await firstLive(emu, 'jobs', (x) => x.visits.length > 0)
    const got = (await emu.get(`/api/v1/jobs/${j.id}`)).body.data
    expect(got.visits.length).toBeGreaterThan(0)
    for (const v of got.visits) expect(Object.keys(v)).toEqual(['id', 'visitStatus'])
  })
  test('Job: DELETE hides the job (404 afterwards)', async () => {
    const c = await client()
    const j = (await emu.call('POST', '/api/v1/jobs', { clientId: c.id })).body.data
    expect((await emu.call('DELETE', `/api/v1/jobs/${j.id}`)).status).toBe(200)
    expect((await emu.get(`/api/v1/jobs/${j.id}`)).status).toBe(404)
  })
  test('Jobs: a multipart body is not accepted on the v1 route', async () => {
    const r = await emu.call('POST', '/api/v1/jobs', '--x\r\nContent-Disposition: form-data; name="jobData"\r\n\r\n{}\r\n--x--', {
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
    })
    expect(r.status).toBe(400)
  })
})
