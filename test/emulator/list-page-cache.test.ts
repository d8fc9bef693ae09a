// The emulator keeps finished bodies of unfiltered list pages until the next write to that resource
// (emulator/http/list-query.ts). Conformance here: spec "Shared list parameters" and the
// incremental-sync rule must hold across writes, i.e. a page asked for again after any kind of
// write (API, web app, soft delete, the automatic overdue move) shows that write.
import { afterEach, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
afterEach(() => emu.close())

const page = async (path: string): Promise<any> => {
  const r = await emu.get(path)
  expect(r.status).toBe(200)
  return r.body
}

describe('Shared list parameters: a repeated page reflects every write in between', () => {
  test('Shared list parameters: an API update moves the row to the end of sort=updatedAt:asc', async () => {
    emu = await boot()
    const first = await page('/api/v1/clients?sort=updatedAt:asc&limit=100')
    expect(await page('/api/v1/clients?sort=updatedAt:asc&limit=100')).toEqual(first)
    const target = first.data[0]
    expect((await emu.call('PUT', `/api/v1/clients/${target.id}`, { notes: 'cache check' })).status).toBe(200)
    const again = await page('/api/v1/clients?sort=updatedAt:asc&limit=100')
    expect(again.data.at(-1)).toMatchObject({ id: target.id, notes: 'cache check' })
    expect(again.data[0].id).not.toBe(target.id)
  })

  test('Shared list parameters: a soft delete leaves the page and lowers meta.total', async () => {
    emu = await boot()
    const before = await page('/api/v1/jobs?limit=100')
    const gone = before.data[3].id
    expect((await emu.call('DELETE', `/api/v1/jobs/${gone}`)).status).toBe(200)
    const after = await page('/api/v1/jobs?limit=100')
    expect(after.meta.total).toBe(before.meta.total - 1)
    expect(after.data.map((r: any) => r.id)).not.toContain(gone)
  })

  test('Shared list parameters: a web-app write (no webhook) shows on the same since page', async () => {
    emu = await boot()
    const path = `/api/v1/visits?sort=updatedAt:desc&limit=5&since=${encodeURIComponent('2000-01-01T00:00:00Z')}`
    const before = await page(path)
    const visit = await firstLive(emu, 'visits', (v) => !before.data.some((r: any) => r.id === v.id))
    await emu.control('POST', '/mutate', { resource: 'visits', op: 'update', id: visit.id, fields: { notes: 'edited in the app' } })
    const after = await page(path)
    expect(after.meta.total).toBe(before.meta.total)
    expect(after.data[0]).toMatchObject({ id: visit.id, notes: 'edited in the app' })
    expect(after).not.toEqual(before)
  })

  test('Shared list parameters: different page, limit and since values are different answers', async () => {
    emu = await boot()
    const a = await page('/api/v1/invoices?limit=5&page=1')
    const b = await page('/api/v1/invoices?limit=5&page=2')
    const c = await page('/api/v1/invoices?limit=10&page=1')
    expect(b.data[0].id).not.toBe(a.data[0].id)
    expect(c.data.slice(0, 5)).toEqual(a.data)
    const pivot = [...c.data].sort((x: any, y: any) => (x.updatedAt < y.updatedAt ? -1 : 1))[5].updatedAt
    const since = await page(`/api/v1/invoices?limit=100&sort=updatedAt:asc&since=${encodeURIComponent(pivot)}`)
    expect(since.data.every((r: any) => r.updatedAt >= pivot)).toBe(true)
    expect(since.meta.total).toBeLessThan((await page('/api/v1/invoices?limit=100')).meta.total)
  })
})
