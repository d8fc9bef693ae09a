// Conformance: spec "Visit", "Visit status", "Job status" (rollup), "Invoice", "Invoice status".
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot()
})
afterAll(() => emu.close())

/** A fresh job with `n` unscheduled visits made in the web app (visits cannot be created over the API). */
async function jobWithVisits(n: number): Promise<{ job: any; visits: any[] }> {
  const client = (await emu.call('POST', '/api/v1/clients', { firstName: 'V' })).body.data
  const job = (await emu.call('POST', '/api/v1/jobs', { clientId: client.id, scheduleLater: true })).body.data
  const visits = []
  for (let i = 0; i < n; i++)
    visits.push((await emu.control('POST', '/mutate', { resource: 'visits', op: 'create', fields: { jobId: job.id } }))[0])
  return { job, visits }
}

describe('Visit', () => {
  const badKeys = ['jobId', 'technicianId', 'scheduledStart', 'scheduledEnd', 'unscheduled', 'actualEndTime', 'status']
  test.each(badKeys)('Visits PATCH: %s gives 400 naming it', async (k) => {
    const v = await firstLive(emu, 'visits')
    const r = await emu.call('PATCH', `/api/v1/visits/${v.id}`, { [k]: 'x' })
    expect(r.status).toBe(400)
    expect(r.body.message).toContain(k)
  })
  test('Visits: no POST, PUT or DELETE exists', async () => {
    const v = await firstLive(emu, 'visits')
    expect((await emu.call('POST', '/api/v1/visits', { jobId: v.jobId })).status).toBe(404)
    expect((await emu.call('PUT', `/api/v1/visits/${v.id}`, {})).status).toBe(404)
    expect((await emu.call('DELETE', `/api/v1/visits/${v.id}`)).status).toBe(404)
  })
  test('Visit: visitStatus is case-insensitive on input and stored canonically', async () => {
    const v = await firstLive(emu, 'visits')
    expect((await emu.call('PATCH', `/api/v1/visits/${v.id}`, { visitStatus: 'In_Transit' })).body.data.visitStatus).toBe('in_transit')
  })
  test('Visit status: an invalid value gives 400; order is not policed (any valid value from any value)', async () => {
    const v = await firstLive(emu, 'visits', (x) => x.visitStatus === 'completed')
    expect((await emu.call('PATCH', `/api/v1/visits/${v.id}`, { visitStatus: 'done' })).status).toBe(400)
    expect((await emu.call('PATCH', `/api/v1/visits/${v.id}`, { visitStatus: 'unscheduled' })).status).toBe(200)
  })
  test('Visit status: completed stamps actualEndTime with the current time', async () => {
    const v = await firstLive(emu, 'visits', (x) => x.visitStatus !== 'completed')
    await emu.control('POST', '/clock', { freezeAt: '2032-02-02T02:02:02.222Z' })
    const u = (await emu.call('PATCH', `/api/v1/visits/${v.id}`, { visitStatus: 'completed' })).body.data
    await emu.control('POST', '/clock', { freezeAt: null })
    expect(u.actualEndTime).toBe('2032-02-02T02:02:02.222Z')
    expect(u.updatedAt).toBe('2032-02-02T02:02:02.222Z')
  })
  test('Visit status: unscheduled -> scheduled clears the job scheduleLater flag', async () => {
    const { job, visits } = await jobWithVisits(1)
    expect(job.scheduleLater).toBe(true)
    await emu.call('PATCH', `/api/v1/visits/${visits[0].id}`, { visitStatus: 'scheduled', visitStartDateTime: '2030-01-01T10:00:00Z' })
    expect((await emu.get(`/api/v1/jobs/${job.id}`)).body.data.scheduleLater).toBe(false)
  })
  test('Visit status: the job status is re-derived from its active visits; completing the last one completes the job', async () => {
    const { job, visits } = await jobWithVisits(2)
    await emu.call('PATCH', `/api/v1/visits/${visits[0].id}`, { visitStatus: 'in_progress' })
    expect((await emu.get(`/api/v1/jobs/${job.id}`)).body.data.jobStatus).toBe('in-progress')
    await emu.call('PATCH', `/api/v1/visits/${visits[0].id}`, { visitStatus: 'completed' })
    await emu.call('PATCH', `/api/v1/visits/${visits[1].id}`, { visitStatus: 'cancelled' })
    const after = (await emu.get(`/api/v1/jobs/${job.id}`)).body.data
    expect(after.jobStatus).toBe('completed')
    expect(after.visits).toEqual([
      { id: visits[0].id, visitStatus: 'completed' },
      { id: visits[1].id, visitStatus: 'cancelled' },
    ])
  })
  test('Visit status: cancelled keeps the record (the way to retire a visit)', async () => {
    const v = await firstLive(emu, 'visits')
    await emu.call('PATCH', `/api/v1/visits/${v.id}`, { visitStatus: 'cancelled' })
    expect((await emu.get(`/api/v1/visits/${v.id}`)).body.data.visitStatus).toBe('cancelled')
  })
  test('Visit: teamId takes several assignees; serviceDuration an integer', async () => {
    const v = await firstLive(emu, 'visits')
    const team = (await emu.get('/api/teams', { key: null, bearer: emu.apiKey })).body.data.team.map((m: any) => m.id)
    const u = await emu.call('PATCH', `/api/v1/visits/${v.id}`, { teamId: team.slice(0, 3), serviceDuration: 90, anyTime: true })
    expect(u.body.data).toMatchObject({ teamId: team.slice(0, 3), serviceDuration: 90, anyTime: true })
    expect((await emu.call('PATCH', `/api/v1/visits/${v.id}`, { serviceDuration: 1.5 })).status).toBe(400)
  })
})

describe('Invoice', () => {
  const base = async () => ({
    clientId: (await firstLive(emu, 'clients')).id,
    items: [{ name: 'Fix', quantity: 2, rate: 50, taxes: [{ taxId: 't1', taxName: 'State', taxType: 1 }] }],
  })
  test('Invoice: create stores subTotal and total as sent (no arithmetic); omitted ones are 0; line-item tax defaults 0', async () => {
    const r = await emu.call('POST', '/api/v1/invoices', { ...(await base()), subTotal: 1, taxes: [{ taxId: 'd1', name: 'Doc', rate: 5 }] })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ subTotal: 1, total: 0, status: 'unpaid', taxes: [{ taxId: 'd1', name: 'Doc', rate: 5 }] })
    expect(r.body.data.items[0].taxes[0]).toMatchObject({ taxRate: 0, taxAmount: 0 })
    expect(r.body.data).not.toHaveProperty('taxTotal')
  })
  test('Invoice: at least one line item is required on create', async () => {
    expect((await emu.call('POST', '/api/v1/invoices', { ...(await base()), items: [] })).status).toBe(400)
  })
  test('Invoice: document-level taxes are rejected on update (400)', async () => {
    const inv = await firstLive(emu, 'invoices')
    expect((await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { taxes: [] })).status).toBe(400)
  })
  test('Invoice status: PUT with one of the four moves it; other values are dropped', async () => {
    const inv = (await emu.call('POST', '/api/v1/invoices', await base())).body.data
    expect(
      (await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { status: 'partial', paidAmount: 10, paymentStatus: 'partially_paid' })).body
        .data,
    ).toMatchObject({ status: 'partial', paidAmount: 10 })
    const r = await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { status: 'sent', title: 'kept' })
    expect(r.status).toBe(200)
    expect(r.body.data).toMatchObject({ status: 'partial', title: 'kept' })
  })
  test('Invoices: DELETE soft-deletes any invoice and returns {id, deleted: true}; 404 afterwards', async () => {
    const inv = await firstLive(emu, 'invoices', (x) => x.status === 'paid')
    const r = await emu.call('DELETE', `/api/v1/invoices/${inv.id}`)
    expect(r.body).toEqual({ success: true, data: { id: inv.id, deleted: true } })
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).status).toBe(404)
    expect((await emu.call('DELETE', `/api/v1/invoices/${inv.id}`)).status).toBe(404)
  })
  test('Invoices: the payment link is minted once and returned identically', async () => {
    const inv = await firstLive(emu, 'invoices')
    const a = await emu.get(`/api/v1/invoices/${inv.id}/payment-link`)
    expect(a.body.data).toEqual({ paymentUrl: expect.any(String), invoiceId: inv.id, amount: expect.any(Number), currency: 'usd' })
    expect((await emu.get(`/api/v1/invoices/${inv.id}/payment-link`)).body).toEqual(a.body)
  })
  test('Invoices: payment link with the processor not connected gives 400 INTEGRATION_NOT_CONNECTED', async () => {
    const inv = await firstLive(emu, 'invoices')
    await emu.control('POST', '/integrations/payments', { connected: false })
    const r = await emu.get(`/api/v1/invoices/${inv.id}/payment-link`)
    await emu.control('POST', '/integrations/payments', { connected: true })
    expect(r.status).toBe(400)
    expect(r.body.code).toBe('INTEGRATION_NOT_CONNECTED')
  })
  test('Invoice: date and dueDate are YYYY-MM-DD dates', async () => {
    expect((await emu.call('POST', '/api/v1/invoices', { ...(await base()), dueDate: '2030-01-01T00:00:00Z' })).status).toBe(400)
    expect((await emu.call('POST', '/api/v1/invoices', { ...(await base()), dueDate: '2030-01-31' })).body.data.dueDate).toBe('2030-01-31')
  })
})
