// Conformance: spec "Invoice status" (`unpaid`/`partial` -> `overdue` when the due date passes, set
// automatically), "When events fire" (only v1 writes emit `invoice.*`; `invoice.overdue` is not
// subscribable) and "Invoice" ("the single-invoice response includes totals and captured signature
// blocks"). The emulator's clock is fixed and advanced through the control API.
import { afterEach, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

const T0 = Date.parse('2026-03-10T12:00:00.000Z')
const NEXT_MIDNIGHT = '2026-03-11T00:00:00.000Z'
const HOUR = 3_600_000

let emu: Emu
afterEach(() => emu.close())

const invoice = async (fields: Record<string, unknown>) => {
  const clientId = (await firstLive(emu, 'clients')).id
  const r = await emu.call('POST', '/api/v1/invoices', { clientId, items: [{ name: 'Fix', quantity: 1, rate: 10 }], ...fields })
  expect(r.status).toBe(200)
  return r.body.data
}
const events = async (name: string): Promise<number> => (await emu.control('GET', '/counters'))[`events.${name}`] ?? 0

describe('Invoice status: automatic overdue on the emulator clock', () => {
  test('Invoice status: an unpaid invoice turns overdue once its due date has passed, updatedAt at that instant', async () => {
    emu = await boot({ now: () => T0 })
    const inv = await invoice({ dueDate: '2026-03-10' })
    await emu.control('POST', '/clock', { advanceMs: 12 * HOUR - 1 })
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.status).toBe('unpaid')
    await emu.control('POST', '/clock', { advanceMs: 1 + HOUR })
    const got = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data
    expect(got).toMatchObject({ status: 'overdue', updatedAt: NEXT_MIDNIGHT, paymentStatus: 'unpaid' })
  })

  test('Invoice status: lists with status=overdue and since see the move; no webhook event is emitted', async () => {
    emu = await boot({ now: () => T0 })
    const inv = await invoice({ dueDate: '2026-03-10' })
    await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { status: 'partial', paidAmount: 4 })
    const updatedBefore = await events('invoice.updated')
    const cursor = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.updatedAt
    await emu.control('POST', '/clock', { advanceMs: 2 * 24 * HOUR })
    const since = await emu.get(`/api/v1/invoices?sort=updatedAt:asc&since=${encodeURIComponent(cursor)}&limit=100`)
    expect(since.body.data.map((r: any) => [r.id, r.status])).toContainEqual([inv.id, 'overdue'])
    const overdue = await emu.get('/api/v1/invoices?status=overdue&limit=100')
    expect(overdue.body.data.map((r: any) => r.id)).toContain(inv.id)
    expect(await events('invoice.updated')).toBe(updatedBefore)
    expect((await emu.control('GET', '/counters'))['writes.invoices.overdue']).toBe(1)
  })

  test('Invoice status: paid invoices and invoices without a due date never move', async () => {
    emu = await boot({ now: () => T0 })
    const paid = await invoice({ dueDate: '2026-03-01' })
    await emu.call('PUT', `/api/v1/invoices/${paid.id}`, { status: 'paid' })
    const noDue = await invoice({})
    await emu.control('POST', '/clock', { advanceMs: 400 * 24 * HOUR })
    expect((await emu.get(`/api/v1/invoices/${paid.id}`)).body.data.status).toBe('paid')
    expect((await emu.get(`/api/v1/invoices/${noDue.id}`)).body.data.status).toBe('unpaid')
  })

  test('Invoice status: written after its due date, it moves at the next request, stamped then (updatedAt never goes back)', async () => {
    emu = await boot({ now: () => T0 })
    const inv = await invoice({ dueDate: '2020-01-01' })
    expect(inv.status).toBe('unpaid')
    await emu.control('POST', '/clock', { advanceMs: 1000 })
    const got = (await emu.get(`/api/v1/invoices/${inv.id}`)).body.data
    expect(got.status).toBe('overdue')
    // The control request at T0 made the move: the same instant as the create, never earlier.
    expect(got.updatedAt).toBe(inv.updatedAt)
    const since = await emu.get(`/api/v1/invoices?sort=updatedAt:asc&since=${encodeURIComponent(inv.updatedAt)}`)
    expect(since.body.data.map((r: any) => [r.id, r.status])).toContainEqual([inv.id, 'overdue'])
  })

  test('Invoice status: seeded invoices are consistent, so the first requests move nothing', async () => {
    emu = await boot({ now: () => T0 })
    const before = await emu.control('GET', '/state/invoices')
    expect(before.filter((r: any) => (r.status === 'unpaid' || r.status === 'partial') && r.dueDate < '2026-03-10')).toEqual([])
    expect((await emu.control('GET', '/counters'))['writes.invoices.overdue']).toBeUndefined()
  })
  test('Invoice status: "may also be set by PUT": a PUT back to unpaid after the move sticks until the due date changes', async () => {
    emu = await boot({ now: () => T0 })
    const inv = await invoice({ dueDate: '2026-03-10' })
    await emu.control('POST', '/clock', { advanceMs: 24 * HOUR })
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.status).toBe('overdue')
    expect((await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { status: 'unpaid' })).status).toBe(200)
    await emu.control('POST', '/clock', { advanceMs: HOUR })
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.status).toBe('unpaid')
    expect((await emu.call('PUT', `/api/v1/invoices/${inv.id}`, { dueDate: '2026-03-11' })).status).toBe(200)
    await emu.control('POST', '/clock', { advanceMs: 24 * HOUR })
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.status).toBe('overdue')
  })
})

describe('Invoice: captured signature blocks', () => {
  test('Invoice: GET /invoices/{id} carries signatures (role, name, signedAt, imageUrl); list rows do not', async () => {
    emu = await boot({ now: () => T0 })
    const paid = await firstLive(emu, 'invoices', (r) => r.status === 'paid')
    const one = (await emu.get(`/api/v1/invoices/${paid.id}`)).body.data
    expect(one.signatures).toEqual([
      {
        role: 'client',
        name: expect.any(String),
        signedAt: paid.createdAt,
        imageUrl: `${emu.url}/hosted/signatures/${paid.id}/client.png`,
      },
    ])
    expect(one).toMatchObject({ subTotal: paid.subTotal, total: paid.total })
    const list = (await emu.get('/api/v1/invoices?limit=100')).body.data
    expect(list.length).toBeGreaterThan(0)
    expect(list.every((r: any) => !('signatures' in r))).toBe(true)
  })

  test('Invoice: an invoice created over the API has no signature blocks (an empty array)', async () => {
    emu = await boot({ now: () => T0 })
    const inv = await invoice({})
    expect(inv).not.toHaveProperty('signatures')
    expect((await emu.get(`/api/v1/invoices/${inv.id}`)).body.data.signatures).toEqual([])
  })
})
