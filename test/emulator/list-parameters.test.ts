// Conformance: spec "Shared list parameters" and the per-resource filters of "Endpoints".
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boot, firstLive, type Emu } from './harness.js'

let emu: Emu
beforeAll(async () => {
  emu = await boot({ counts: { clients: 150, jobs: 120, invoices: 110 } })
})
afterAll(() => emu.close())

const RESOURCES = ['clients', 'jobs', 'visits', 'invoices'] as const

describe('Shared list parameters', () => {
  test.each(RESOURCES)('Shared list parameters: %s default page 1, limit 30, meta {page, limit, total}', async (r) => {
    const res = await emu.get(`/api/v1/${r}`)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.data).toHaveLength(30)
    expect(res.body.meta).toEqual({ page: 1, limit: 30, total: expect.any(Number) })
  })

  test.each(RESOURCES)('Shared list parameters: %s limit above 100 is clamped to 100 (still 200)', async (r) => {
    const res = await emu.get(`/api/v1/${r}?limit=500`)
    expect(res.status).toBe(200)
    expect(res.body.data).toHaveLength(100)
    expect(res.body.meta.limit).toBe(100)
  })

  test.each(RESOURCES)('Shared list parameters: %s default ordering is createdAt descending', async (r) => {
    const rows = (await emu.get(`/api/v1/${r}?limit=100`)).body.data as { createdAt: string }[]
    const times = rows.map((x) => x.createdAt)
    expect(times).toEqual([...times].sort().reverse())
  })

  test.each(RESOURCES)('Shared list parameters: %s pages partition the rows (increment page until page*limit >= total)', async (r) => {
    const first = await emu.get(`/api/v1/${r}?limit=40&page=1`)
    const ids: string[] = []
    for (let page = 1; (page - 1) * 40 < first.body.meta.total; page++)
      ids.push(...(await emu.get(`/api/v1/${r}?limit=40&page=${page}`)).body.data.map((x: any) => x.id))
    expect(ids).toHaveLength(first.body.meta.total)
    expect(new Set(ids).size).toBe(ids.length)
  })

  const SORTABLE: Record<(typeof RESOURCES)[number], [string[], string]> = {
    clients: [['createdAt', 'updatedAt', 'firstName', 'lastName', 'companyName', 'stage'], 'email'],
    jobs: [['createdAt', 'updatedAt', 'startDateTime', 'endDateTime', 'jobNumber', 'total', 'jobStatus', 'priority'], 'clientName'],
    visits: [['createdAt', 'updatedAt', 'visitStartDateTime', 'visitEndDateTime', 'visitStatus'], 'jobId'],
    invoices: [['createdAt', 'updatedAt', 'total', 'paymentStatus', 'dueDate', 'documentNumber'], 'title'],
  }
  const sortCases = RESOURCES.flatMap((r) => SORTABLE[r][0].map((f) => [r, f] as const))
  test.each(sortCases)('Endpoints: %s is sortable by %s (asc orders the field)', async (r, field) => {
    const res = await emu.get(`/api/v1/${r}?limit=100&sort=${field}:asc`)
    expect(res.status).toBe(200)
    const values = res.body.data.map((x: any) => x[field]).filter((v: unknown) => v !== null && v !== undefined)
    const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    expect(values).toEqual(sorted)
  })
  test.each(RESOURCES)('Shared list parameters: %s sort on a field outside the sortable list gives 400', async (r) => {
    expect((await emu.get(`/api/v1/${r}?sort=${SORTABLE[r][1]}:asc`)).status).toBe(400)
  })
  test('Shared list parameters: the sort direction defaults to desc', async () => {
    const rows = (await emu.get('/api/v1/clients?limit=100&sort=updatedAt')).body.data.map((x: any) => x.updatedAt)
    expect(rows).toEqual([...rows].sort().reverse())
  })
  test('Shared list parameters: a direction other than asc/desc gives 400', async () => {
    expect((await emu.get('/api/v1/clients?sort=updatedAt:up')).status).toBe(400)
  })

  test.each(RESOURCES)('Shared list parameters: %s since is inclusive on updatedAt', async (r) => {
    const rows = (await emu.get(`/api/v1/${r}?limit=100&sort=updatedAt:asc`)).body.data
    const pivot = rows[50].updatedAt as string
    const res = await emu.get(`/api/v1/${r}?limit=100&sort=updatedAt:asc&since=${encodeURIComponent(pivot)}`)
    expect(res.body.data[0].updatedAt).toBe(pivot)
    expect(res.body.data.every((x: any) => x.updatedAt >= pivot)).toBe(true)
  })
  test.each(['yesterday', '2024-13-45', '12345'])('Shared list parameters: since=%s is not a date: 400', async (v) => {
    expect((await emu.get(`/api/v1/jobs?since=${v}`)).status).toBe(400)
  })
  test('Shared list parameters: a zone-less since is read as UTC', async () => {
    const rows = (await emu.get('/api/v1/clients?limit=100&sort=updatedAt:asc')).body.data
    const pivot = rows[60].updatedAt as string
    const res = await emu.get(`/api/v1/clients?limit=100&sort=updatedAt:asc&since=${encodeURIComponent(pivot.slice(0, -1))}`)
    expect(res.body.data[0].updatedAt).toBe(pivot)
  })
  test('Shared list parameters: timezone interprets a zone-less since as wall-clock time there; ignored with Z', async () => {
    const rows = (await emu.get('/api/v1/clients?limit=100&sort=updatedAt:asc')).body.data
    const pivot = new Date(rows[40].updatedAt)
    // 6 hours behind UTC in winter, 5 in summer: Chicago wall-clock for the pivot instant.
    const wall = new Date(pivot.getTime() - chicagoOffsetMs(pivot)).toISOString().slice(0, 23)
    const zoned = await emu.get(`/api/v1/clients?limit=100&sort=updatedAt:asc&timezone=America/Chicago&since=${encodeURIComponent(wall)}`)
    expect(zoned.body.data[0].updatedAt).toBe(rows[40].updatedAt)
    const withZ = await emu.get(
      `/api/v1/clients?limit=100&sort=updatedAt:asc&timezone=America/Chicago&since=${encodeURIComponent(rows[40].updatedAt)}`,
    )
    expect(withZ.body.data[0].updatedAt).toBe(rows[40].updatedAt)
  })
})

function chicagoOffsetMs(at: Date): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: 'America/Chicago',
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(at)
  const g = (t: string) => Number(parts.find((p) => p.type === t)!.value)
  return Math.floor(at.getTime() / 1000) * 1000 - Date.UTC(g('year'), g('month') - 1, g('day'), g('hour'), g('minute'), g('second'))
}

describe('Endpoints: list filters', () => {
  test('Clients: search is case-insensitive and partial over name, email, phone and company', async () => {
    const c = await firstLive(emu, 'clients', (x) => x.companyName !== '')
    for (const needle of [
      c.lastName.slice(0, 3).toUpperCase(),
      c.email.slice(2, 8),
      c.phoneNumber.number.slice(-4),
      c.companyName.toLowerCase(),
    ]) {
      const res = await emu.get(`/api/v1/clients?limit=100&search=${encodeURIComponent(needle)}`)
      expect(res.body.data.map((x: any) => x.id)).toContain(c.id)
    }
  })
  test('Clients: search excludes soft-deleted clients', async () => {
    const c = await firstLive(emu, 'clients')
    await emu.call('DELETE', `/api/v1/clients/${c.id}`)
    const res = await emu.get(`/api/v1/clients?limit=100&search=${encodeURIComponent(c.email)}`)
    expect(res.body.data.map((x: any) => x.id)).not.toContain(c.id)
  })
  test('Clients: stage filter', async () => {
    const res = await emu.get('/api/v1/clients?limit=100&stage=Won')
    expect(res.body.data.length).toBeGreaterThan(0)
    expect(res.body.data.every((x: any) => x.stage === 'Won')).toBe(true)
  })
  test('Jobs: status is one value matched case-insensitively against the whole value; jobStatus is an alias', async () => {
    const a = await emu.get('/api/v1/jobs?limit=100&status=IN-PROGRESS')
    expect(a.body.data.length).toBeGreaterThan(0)
    expect(a.body.data.every((x: any) => x.jobStatus === 'in-progress')).toBe(true)
    expect((await emu.get('/api/v1/jobs?limit=100&jobStatus=in-progress')).body.meta.total).toBe(a.body.meta.total)
    expect((await emu.get('/api/v1/jobs?status=in')).body.meta.total).toBe(0)
  })
  test('Jobs: clientId filter and search by job number or client name only', async () => {
    const j = await firstLive(emu, 'jobs')
    expect((await emu.get(`/api/v1/jobs?clientId=${j.clientId}&limit=100`)).body.data.every((x: any) => x.clientId === j.clientId)).toBe(
      true,
    )
    expect((await emu.get(`/api/v1/jobs?search=${j.jobNumber}&limit=100`)).body.data.map((x: any) => x.id)).toContain(j.id)
    const client = (await emu.control('GET', '/state/clients')).find((c: any) => c.id === j.clientId)
    expect(
      (await emu.get(`/api/v1/jobs?search=${encodeURIComponent(client.firstName)}&limit=100`)).body.data.map((x: any) => x.id),
    ).toContain(j.id)
    expect((await emu.get(`/api/v1/jobs?search=${encodeURIComponent(client.email)}`)).body.meta.total).toBe(0)
  })
  test('Visits: visitStatus is case-insensitive; jobId filter', async () => {
    const res = await emu.get('/api/v1/visits?limit=100&visitStatus=COMPLETED')
    expect(res.body.data.length).toBeGreaterThan(0)
    expect(res.body.data.every((x: any) => x.visitStatus === 'completed')).toBe(true)
    const v = res.body.data[0]
    expect((await emu.get(`/api/v1/visits?jobId=${v.jobId}`)).body.data.every((x: any) => x.jobId === v.jobId)).toBe(true)
  })
  test.each(['done', 'scheduled,completed'])(
    'Visits: visitStatus=%s (unknown, or a comma list) gives 400 with the valid list',
    async (v) => {
      const res = await emu.get(`/api/v1/visits?visitStatus=${v}`)
      expect(res.status).toBe(400)
      expect(res.body.message).toContain('in_transit')
    },
  )
  test('Visits: startDate and endDate bound visitStartDateTime; not a date gives 400', async () => {
    const all = (await emu.get('/api/v1/visits?limit=100&sort=visitStartDateTime:asc')).body.data.filter(
      (x: any) => x.visitStartDateTime !== null,
    )
    const from = all[10].visitStartDateTime
    const to = all[30].visitStartDateTime
    const res = await emu.get(`/api/v1/visits?limit=100&startDate=${from}&endDate=${to}`)
    expect(res.body.data.length).toBeGreaterThan(0)
    expect(res.body.data.every((x: any) => x.visitStartDateTime >= from && x.visitStartDateTime <= to)).toBe(true)
    expect((await emu.get('/api/v1/visits?startDate=soon')).status).toBe(400)
    expect((await emu.get('/api/v1/visits?endDate=2024-02-31')).status).toBe(400)
  })
  test('Visits: timezone interprets zone-less startDate/endDate as wall-clock time there (UTC without it)', async () => {
    const all = (await emu.get('/api/v1/visits?limit=100&sort=visitStartDateTime:asc')).body.data.filter(
      (x: any) => x.visitStartDateTime !== null,
    )
    const at = all[20].visitStartDateTime as string
    // The same instant as Chicago wall-clock time (UTC-6 in winter, UTC-5 in summer), without a zone.
    const offsetH = new Date(at).toLocaleString('en-US', { timeZone: 'America/Chicago', timeZoneName: 'short' }).endsWith('CDT') ? 5 : 6
    const wall = new Date(Date.parse(at) - offsetH * 3_600_000).toISOString().slice(0, 23)
    const zoned = (await emu.get(`/api/v1/visits?limit=100&timezone=America/Chicago&startDate=${wall}&endDate=${wall}`)).body.data
    expect(zoned.map((x: any) => x.visitStartDateTime)).toContain(at)
    expect(zoned.every((x: any) => x.visitStartDateTime === at)).toBe(true)
    // Read as UTC without timezone: a different instant, so this visit is not in the window.
    const utc = (await emu.get(`/api/v1/visits?limit=100&startDate=${wall}&endDate=${wall}`)).body.data
    expect(utc.map((x: any) => x.id)).not.toContain(all[20].id)
  })
  test('Invoices: status (case-insensitive, whole value) and clientId filters', async () => {
    const res = await emu.get('/api/v1/invoices?limit=100&status=PAID')
    expect(res.body.data.length).toBeGreaterThan(0)
    expect(res.body.data.every((x: any) => x.status === 'paid')).toBe(true)
    const inv = res.body.data[0]
    expect((await emu.get(`/api/v1/invoices?clientId=${inv.clientId}`)).body.data.every((x: any) => x.clientId === inv.clientId)).toBe(true)
  })
  test('Conventions 5-6: every list body has success, data array and meta; no next-cursor', async () => {
    const res = await emu.get('/api/v1/invoices')
    expect(Object.keys(res.body)).toEqual(['success', 'data', 'meta'])
    expect(Object.keys(res.body.meta)).toEqual(['page', 'limit', 'total'])
  })
})
