// Conformance: spec "Versioning" 2 (the legacy job create takes multipart form data, `jobData` plus
// notes; v1 takes plain JSON), "Jobs" (no multipart on v1), "Legacy routes" and "Authentication"
// (Bearer only, no scopes, JWTs on legacy routes only), "When events fire", and the "Earlier schema
// revision (interactive login)" paragraph (login body and response, signup).
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type CallOptions, type Emu, type Reply } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

const bearer = (token = emu.apiKey): CallOptions => ({ key: null, bearer: token })

interface Part {
  name: string
  value: string
  filename?: string
  type?: string
}

function form(parts: Part[], boundary = '----emu-form-7d2f'): { body: string; type: string } {
  const lines = parts.map((p) => {
    const disposition = `Content-Disposition: form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`
    return `--${boundary}\r\n${disposition}\r\n${p.type === undefined ? '' : `Content-Type: ${p.type}\r\n`}\r\n${p.value}\r\n`
  })
  return { body: `${lines.join('')}--${boundary}--\r\n`, type: `multipart/form-data; boundary=${boundary}` }
}

const postForm = (parts: Part[], options: CallOptions = bearer(), path = '/api/jobs'): Promise<Reply> => {
  const f = form(parts)
  return emu.call('POST', path, f.body, { ...options, headers: { 'content-type': f.type } })
}
const raw = (body: string, type: string, options: CallOptions = bearer()): Promise<Reply> =>
  emu.call('POST', '/api/jobs', body, { ...options, headers: { 'content-type': type } })
const counters = async (): Promise<Record<string, number>> => emu.control('GET', '/counters')
const clientId = async (): Promise<string> => (await firstLive(emu, 'clients')).id as string
const jobData = async (extra: Record<string, unknown> = {}): Promise<Part> => ({
  name: 'jobData',
  value: JSON.stringify({ clientId: await clientId(), ...extra }),
  type: 'application/json',
})

async function login(email: string, password: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  return emu.call('POST', '/api/auth/login', { email, password, ...extra }, { key: null })
}

describe('Versioning 2: the legacy job create takes multipart form data (jobData plus notes)', () => {
  test('Versioning 2: POST /api/jobs with a jobData part and a notes part creates the job (legacy `_id` payload)', async () => {
    const r = await postForm([
      await jobData({ jobNumber: 'LEG-1', total: 125.5, priority: 'high' }),
      { name: 'notes', value: 'Gate code 4411\nDog in yard' },
    ])
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    expect(r.body.data).toMatchObject({
      _id: expect.stringMatching(/^[a-f0-9]{24}$/),
      jobNumber: 'LEG-1',
      total: 125.5,
      priority: 'high',
      notes: 'Gate code 4411\nDog in yard',
      jobStatus: 'scheduled',
    })
    expect(r.body.data).not.toHaveProperty('id')
  })
  test('Versioning 2: the legacy-created job appears in the v1 list and single GET', async () => {
    const r = await postForm([await jobData({ jobNumber: 'LEG-LIST' })])
    const id = r.body.data._id as string
    const list = (await emu.get('/api/v1/jobs?search=LEG-LIST')).body.data
    expect(list.map((j: { id: string }) => j.id)).toEqual([id])
    expect((await emu.get(`/api/v1/jobs/${id}`)).body.data).toMatchObject({ id, jobNumber: 'LEG-LIST', notes: '' })
  })
  test('Job: jobData follows the v1 job create contract (unknown key, missing clientId, duplicate jobNumber)', async () => {
    const unknown = await postForm([await jobData({ lineItems: [] })])
    expect(unknown.status).toBe(400)
    expect(unknown.body.message).toContain('lineItems')
    const missing = await postForm([{ name: 'jobData', value: JSON.stringify({ priority: 'low' }) }])
    expect(missing.status).toBe(400)
    expect(missing.body.message).toContain('clientId')
    await postForm([await jobData({ jobNumber: 'LEG-DUP' })])
    expect((await postForm([await jobData({ jobNumber: 'LEG-DUP' })])).status).toBe(409)
  })
  test('Versioning 2: notes may also come inside jobData; a notes part that disagrees with them is 400', async () => {
    const inside = await postForm([await jobData({ notes: 'in json' })])
    expect(inside.body.data.notes).toBe('in json')
    const clash = await postForm([await jobData({ internalNotes: 'one' }), { name: 'notes', value: 'two' }])
    expect(clash.status).toBe(400)
    expect(clash.body.message).toContain('disagree')
  })
  const bad: [string, () => Promise<Reply>, RegExp][] = [
    [
      'a JSON body gives 400 naming the expected form',
      async () => emu.call('POST', '/api/jobs', { clientId: await clientId() }, bearer()),
      /multipart\/form-data.*jobData/,
    ],
    ['a missing jobData part gives 400', () => postForm([{ name: 'notes', value: 'only notes' }]), /jobData part is missing/],
    ['jobData that is not JSON gives 400', () => postForm([{ name: 'jobData', value: '{clientId:' }]), /not valid JSON/],
    ['jobData that is a JSON array gives 400', () => postForm([{ name: 'jobData', value: '[]' }]), /JSON object/],
    [
      'an unknown part gives 400 naming it',
      async () => postForm([await jobData(), { name: 'attachments', value: 'x' }]),
      /Unknown form part 'attachments'/,
    ],
    ['a repeated part gives 400', async () => postForm([await jobData(), await jobData()]), /more than once/],
    [
      'a notes file upload gives 400',
      async () => postForm([await jobData(), { name: 'notes', value: 'x', filename: 'n.txt' }]),
      /not a file upload/,
    ],
    ['a Content-Type without boundary gives 400', () => raw('--x\r\n\r\n--x--', 'multipart/form-data'), /boundary parameter/],
    [
      'an invalid boundary gives 400',
      () => raw('--x\r\n\r\n--x--', `multipart/form-data; boundary=${'b'.repeat(71)}`),
      /Invalid multipart boundary/,
    ],
    [
      'a body that lacks the declared boundary gives 400',
      async () => raw(form([await jobData()], 'other').body, 'multipart/form-data; boundary=declared'),
      /does not occur in the body/,
    ],
    [
      'a body without a closing boundary gives 400',
      async () => raw(form([await jobData()], 'b1').body.replace(/--b1--\r\n$/, ''), 'multipart/form-data; boundary=b1'),
      /no closing boundary/,
    ],
    [
      'a part without a name gives 400',
      () => raw('--b2\r\nContent-Disposition: form-data\r\n\r\n{}\r\n--b2--', 'multipart/form-data; boundary=b2'),
      /no name/,
    ],
    ['an empty multipart body gives 400', () => raw('', 'multipart/form-data; boundary=b3'), /Empty multipart body/],
  ]
  test.each(bad)('Versioning 2: %s', async (_name, send, message) => {
    const before = (await emu.get('/api/v1/jobs?limit=1')).body.meta.total
    const r = await send()
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ success: false, message: expect.stringMatching(message), error: expect.any(String) })
    expect((await emu.get('/api/v1/jobs?limit=1')).body.meta.total).toBe(before)
  })
  test('Jobs: a multipart body is not accepted on the v1 route (POST /api/v1/jobs), even a well-formed legacy form', async () => {
    const before = (await emu.get('/api/v1/jobs?limit=1')).body.meta.total
    const r = await postForm([await jobData()], {}, '/api/v1/jobs')
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(/JSON/)
    expect((await emu.get('/api/v1/jobs?limit=1')).body.meta.total).toBe(before)
  })
  test('When events fire: a legacy job create emits no job.created (v1 writes only); a v1 create does', async () => {
    const before = await counters()
    await postForm([await jobData()])
    const afterLegacy = await counters()
    expect(afterLegacy['events.job.created'] ?? 0).toBe(before['events.job.created'] ?? 0)
    expect(afterLegacy['writes.jobs.legacy']).toBe((before['writes.jobs.legacy'] ?? 0) + 1)
    await emu.call('POST', '/api/v1/jobs', { clientId: await clientId() })
    expect((await counters())['events.job.created']).toBe((before['events.job.created'] ?? 0) + 1)
  })
})

describe('Legacy routes and Authentication 7 on the legacy job create', () => {
  test('Authentication 7: X-Api-Key is not read on the legacy job create (401)', async () => {
    const r = await postForm([await jobData()], { key: emu.apiKey })
    expect(r.status).toBe(401)
    expect(r.body.code).toBe('UNAUTHORIZED')
  })
  test("Authentication 7: per-key scopes are not enforced (a jobs:read key creates through Bearer); created as the key's user", async () => {
    const { key } = await emu.key({ scopes: ['jobs:read'] })
    const r = await postForm([await jobData()], bearer(key))
    expect(r.status).toBe(200)
    expect(r.body.data.createdBy).toBe((await emu.control('GET', '/info')).login.userId)
  })
  test('Authentication 7: a support-issued JWT creates through the legacy route', async () => {
    const { token } = await emu.control('POST', '/support-token')
    expect((await postForm([await jobData()], bearer(token))).status).toBe(200)
  })
  test('Authentication 4: a login JWT creates through the legacy route, a multipart v1 create with it gives 401 first', async () => {
    const info = await emu.control('GET', '/info')
    const { token } = (await login(info.login.email, info.login.password)).body.data
    const ok = await postForm([await jobData()], bearer(token))
    expect(ok.status).toBe(200)
    expect(ok.body.data.createdBy).toBe(info.login.userId)
    expect((await postForm([await jobData()], bearer(token), '/api/v1/jobs')).status).toBe(401)
  })
})

describe('Authentication: earlier schema revision (interactive login)', () => {
  test('Authentication, earlier schema revision: /__emulator/info names the seeded login user', async () => {
    const info = await emu.control('GET', '/info')
    expect(info.login).toEqual({
      email: 'owner@northwind-field.test',
      password: 'emulator-owner',
      userId: expect.stringMatching(/^[a-f0-9]{24}$/),
    })
  })
  test('Authentication, earlier schema revision: POST /api/auth/login answers the listed data fields with a JWT-shaped token', async () => {
    const r = await login('Owner@Northwind-Field.test', 'emulator-owner', {
      deviceInfo: { deviceId: 'd-1', deviceType: 1, deviceToken: null },
    })
    expect(r.status).toBe(200)
    expect(Object.keys(r.body.data)).toEqual([
      'id',
      'name',
      'email',
      'token',
      'role',
      'isOnboarded',
      'isTeamMember',
      'timezone',
      'currency',
      'currencySymbol',
      'companyInfo',
      'integrationStatus',
    ])
    const d = r.body.data
    expect(d.token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(Object.keys(d.role)).toEqual(['name', 'permissions', 'id'])
    expect(typeof d.role.permissions).toBe('object')
    expect(d.integrationStatus).toEqual({ payments_connect: true, payments_enabled: true })
    expect(d).toMatchObject({
      email: 'owner@northwind-field.test',
      isOnboarded: true,
      isTeamMember: false,
      currency: 'USD',
      currencySymbol: '$',
      timezone: expect.any(String),
    })
    expect(d.companyInfo.companyName).toEqual(expect.any(String))
  })
  const bodies: [string, Record<string, unknown>, RegExp][] = [
    ['email is required', { password: 'secret1' }, /'email' is required/],
    ['email must have email format', { email: 'not-an-email', password: 'secret1' }, /valid email/],
    ['password is required', { email: 'owner@northwind-field.test' }, /'password' is required/],
    ['password has a minimum length of 6', { email: 'owner@northwind-field.test', password: 'five5' }, /at least 6/],
    ['password must be a string', { email: 'owner@northwind-field.test', password: 1234567 }, /must be a string/],
    ['deviceInfo must be an object', { email: 'owner@northwind-field.test', password: 'emulator-owner', deviceInfo: 'ios' }, /deviceInfo/],
    [
      'deviceType is 1, 2 or 3',
      { email: 'owner@northwind-field.test', password: 'emulator-owner', deviceInfo: { deviceType: 4 } },
      /deviceType/,
    ],
    [
      'deviceToken is a string or null',
      { email: 'owner@northwind-field.test', password: 'emulator-owner', deviceInfo: { deviceToken: 5 } },
      /deviceToken/,
    ],
    ['deviceId is a string', { email: 'owner@northwind-field.test', password: 'emulator-owner', deviceInfo: { deviceId: 5 } }, /deviceId/],
  ]
  test.each(bodies)('Authentication, earlier schema revision: login body rule: %s (400)', async (_name, body, message) => {
    const r = await emu.call('POST', '/api/auth/login', body, { key: null })
    expect(r.status).toBe(400)
    expect(r.body.message).toMatch(message)
  })
  test('Authentication, earlier schema revision: deviceInfo is optional and deviceType defaults (3, Web) are accepted', async () => {
    expect((await login('owner@northwind-field.test', 'emulator-owner', { deviceInfo: { deviceId: 'web-1' } })).status).toBe(200)
  })
  test('Authentication, earlier schema revision: a wrong password or unknown email gives 401 UNAUTHORIZED', async () => {
    for (const [email, password] of [
      ['owner@northwind-field.test', 'wrong-pass'],
      ['nobody@northwind-field.test', 'emulator-owner'],
    ] as const) {
      const r = await login(email, password)
      expect(r.status).toBe(401)
      expect(r.body).toEqual({ success: false, code: 'UNAUTHORIZED', message: 'Invalid email or password' })
    }
  })
  test('Authentication 4 and 7: a login JWT works on legacy routes (Bearer) and gives 401 on v1 routes', async () => {
    const { token } = (await login('owner@northwind-field.test', 'emulator-owner')).body.data
    expect((await emu.get('/api/teams', bearer(token))).status).toBe(200)
    expect((await emu.get('/api/jobs', bearer(token))).status).toBe(200)
    for (const o of [bearer(token), { key: token }]) {
      const r = await emu.get('/api/v1/clients', o)
      expect(r.status).toBe(401)
      expect(r.body.code).toBe('UNAUTHORIZED')
    }
  })
  test('Authentication, earlier schema revision: a forged JWT-shaped token is refused on legacy routes (401)', async () => {
    const { token } = (await login('owner@northwind-field.test', 'emulator-owner')).body.data as { token: string }
    const forged = `${token.slice(0, token.lastIndexOf('.'))}.AAAA`
    expect((await emu.get('/api/teams', bearer(forged))).status).toBe(401)
  })
  test('Authentication, earlier schema revision: signup (name, email, password min 6) returns data.token; the user then logs in', async () => {
    const r = await emu.call(
      'POST',
      '/api/auth/signup',
      { name: 'Dana Field', email: 'dana@example.test', password: 'dana-pass' },
      { key: null },
    )
    expect(r.status).toBe(200)
    expect(r.body.data).toEqual({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) })
    expect((await emu.get('/api/taxes', bearer(r.body.data.token))).status).toBe(200)
    expect((await emu.get('/api/v1/jobs', bearer(r.body.data.token))).status).toBe(401)
    const again = await login('dana@example.test', 'dana-pass')
    expect(again.status).toBe(200)
    expect(again.body.data).toMatchObject({ name: 'Dana Field', email: 'dana@example.test', isOnboarded: false })
  })
  const signups: [string, Record<string, unknown>, number][] = [
    ['name is required', { email: 'a1@example.test', password: 'secret1' }, 400],
    ['email format', { name: 'A', email: 'a1@', password: 'secret1' }, 400],
    ['password minimum 6', { name: 'A', email: 'a1@example.test', password: '12345' }, 400],
    ['an email already in use gives 409', { name: 'A', email: 'owner@northwind-field.test', password: 'secret1' }, 409],
  ]
  test.each(signups)('Authentication, earlier schema revision: signup rule: %s', async (_name, body, status) => {
    expect((await emu.call('POST', '/api/auth/signup', body, { key: null })).status).toBe(status)
  })
})
