// Custom objects, reference data, account metadata and client custom fields synced from the emulator.
import { describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { REFERENCE_STREAMS } from '../../../connectors/reference.js'
import { apiKeyMetadata, webhooks } from '../../../connectors/account-metadata.js'
import { syncMetadata } from '../../../src/sync/metadata-sync.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { syncEnv, type SyncEnv } from '../../support/sync-env.js'

async function discovered(e: EmulatorEnv): Promise<string[]> {
  const r = await e.api('GET', '/api/v1/objects')
  return (r.body.data as { slug: string }[]).map((d) => d.slug)
}

async function compareObjects(e: EmulatorEnv, s: SyncEnv, slug: string): Promise<string[]> {
  const upstream = ((await e.state(`objects/${slug}`)) as Record<string, unknown>[]).filter((r) => r.deleted !== true)
  const problems: string[] = []
  const rows = new Map(
    s
      .rows(`SELECT id, stage, data, updated_at FROM custom_records WHERE slug = ? AND deleted_at IS NULL`, slug)
      .map((r) => [r.id as string, r]),
  )
  for (const rec of upstream) {
    const row = rows.get(rec.id as string)
    if (row === undefined) problems.push(`missing ${String(rec.id)}`)
    else if (row.data !== JSON.stringify(rec.data) || row.stage !== rec.stage) problems.push(`stale ${String(rec.id)}`)
    rows.delete(rec.id as string)
  }
  for (const id of rows.keys()) problems.push(`phantom ${id}`)
  return problems
}

describe('custom objects', () => {
  test('discovery, schemas, records and one view per object with a column per field', async () => {
    const emu = await emulatorEnv({ seed: 31, counts: { clients: 30, jobs: 10, invoices: 5, customRecords: 250 } })
    const env = await syncEnv(emu)
    const results = await env.sync({ streams: [], objects: 'all' })
    expect(results.every((r) => r.outcome === 'success')).toBe(true)
    const slugs = await discovered(emu)
    expect(slugs.length).toBeGreaterThanOrEqual(2)
    for (const slug of slugs) {
      expect(await compareObjects(emu, env, slug)).toEqual([])
      const schema = (await emu.api('GET', `/api/v1/objects/${slug}/schema`)).body.data
      const cols = env.rows(`SELECT name FROM pragma_table_info(?)`, `obj_${slug}`).map((c) => c.name)
      for (const f of schema.fields as { name: string }[]) expect(cols).toContain(f.name)
      const n = env.rows(`SELECT count(*) AS n FROM "obj_${slug}"`)[0]!.n
      expect(n).toBe(env.rows(`SELECT count(*) AS n FROM custom_records WHERE slug = ?`, slug)[0]!.n)
    }
    expect(env.rows(`SELECT slug FROM custom_object_types ORDER BY slug`).map((r) => r.slug)).toEqual([...slugs].sort())
  })

  test('a schema change between syncs: a field added, a field removed; the view follows, no data lost', async () => {
    const emu = await emulatorEnv({ seed: 37, counts: { clients: 10, jobs: 5, invoices: 5, customRecords: 40 } })
    const env = await syncEnv(emu)
    const [slug] = await discovered(emu)
    await env.sync({ streams: [], objects: [slug!] })
    const before = (await emu.api('GET', `/api/v1/objects/${slug!}/schema`)).body.data.fields as {
      name: string
      system?: boolean
      required?: boolean
    }[]
    const removable = before.find((f) => f.system !== true && f.required !== true)!
    await emu.control('POST', `/objects/${slug!}/fields`, { name: 'warranty_code', type: 'text' })
    await emu.control('POST', `/objects/${slug!}/fields/remove`, { name: removable.name })
    const target = ((await emu.state(`objects/${slug!}`)) as { id: string; deleted?: boolean }[]).find((r) => r.deleted !== true)!
    const patched = await emu.api('PATCH', `/api/v1/objects/${slug!}/${target.id}`, { data: { warranty_code: 'W-123' } })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    const results = await env.sync({ streams: [], objects: [slug!] })
    expect(results.every((r) => r.outcome === 'success')).toBe(true)
    const cols = env.rows(`SELECT name FROM pragma_table_info(?)`, `obj_${slug!}`).map((c) => c.name)
    expect(cols).toContain('warranty_code')
    expect(cols).not.toContain(removable.name)
    expect(env.rows(`SELECT warranty_code FROM "obj_${slug!}" WHERE id = ?`, target.id)).toEqual([{ warranty_code: 'W-123' }])
    // The removed field's values are still in the stored JSON.
    const data = JSON.parse(env.rows(`SELECT data FROM custom_records WHERE id = ?`, target.id)[0]!.data as string)
    expect(data).toHaveProperty(removable.name)
    expect(await compareObjects(emu, env, slug!)).toEqual([])
  })

  test('records updated during a walk are caught by the next incremental sync', async () => {
    const emu = await emulatorEnv({ seed: 41, counts: { clients: 10, jobs: 5, invoices: 5, customRecords: 600 } })
    const env = await syncEnv(emu)
    const [slug] = await discovered(emu)
    await emu.control('POST', '/faults', { route: `GET /api/v1/objects/${slug!}`, latencyMs: 60 })
    const walk = env.sync({ streams: [], objects: [slug!] })
    const ids = ((await emu.state(`objects/${slug!}`)) as { id: string; deleted?: boolean }[])
      .filter((r) => r.deleted !== true)
      .map((r) => r.id)
    // Update the first records (already passed by the id-ordered walk) while it runs.
    for (const id of ids.slice(0, 20)) {
      await emu.control('POST', '/mutate', { resource: `objects/${slug!}`, op: 'update', id, fields: {}, emit: false })
    }
    await walk
    await emu.control('POST', '/faults', { clear: true })
    const [again] = await env.sync({ streams: [], objects: [slug!] })
    expect(again!.outcome).toBe('success')
    expect(await compareObjects(emu, env, slug!)).toEqual([])
  })

  test('reconcile marks custom records deleted in the app, and only those', async () => {
    const emu = await emulatorEnv({ seed: 43, counts: { clients: 10, jobs: 5, invoices: 5, customRecords: 100 } })
    const env = await syncEnv(emu)
    const [slug] = await discovered(emu)
    await env.sync({ streams: [], objects: [slug!] })
    const ids = ((await emu.state(`objects/${slug!}`)) as { id: string; deleted?: boolean }[])
      .filter((r) => r.deleted !== true)
      .map((r) => r.id)
    const gone = ids.slice(3, 8)
    for (const id of gone) await emu.control('POST', '/mutate', { resource: `objects/${slug!}`, op: 'delete', id, emit: false })
    const results = await env.reconcile([], [slug!])
    expect(results.map((r) => [r.stream, r.outcome])).toEqual([
      ['objects', 'success'],
      [`objects:${slug!}`, 'success'],
    ])
    expect(env.rows(`SELECT id FROM custom_records WHERE slug = ? AND deleted_at IS NOT NULL ORDER BY id`, slug!).map((r) => r.id)).toEqual(
      [...gone].sort(),
    )
  })
})

describe('reference data through the legacy routes', () => {
  test('full snapshots with the ids normalised; a removed row gets deleted_at', async () => {
    const emu = await emulatorEnv({
      seed: 47,
      counts: { clients: 5, jobs: 2, invoices: 2, items: 30, taxes: 6, teamMembers: 8, jobForms: 4 },
    })
    const env = await syncEnv(emu)
    const results = await env.sync({ streams: [], reference: REFERENCE_STREAMS })
    expect(results.map((r) => [r.stream, r.outcome])).toEqual(REFERENCE_STREAMS.map((s) => [s.name, 'success']))
    for (const [resource, table] of [
      ['items', 'items'],
      ['taxes', 'taxes'],
      ['team', 'team_members'],
      ['job_forms', 'job_forms'],
    ] as const) {
      const upstream = ((await emu.state(resource)) as Record<string, unknown>[]).filter((r) => r.deleted !== true)
      const ids = upstream.map((r) => (r.id ?? r._id ?? r.recordId) as string).sort()
      expect(env.rows(`SELECT id FROM ${table} WHERE deleted_at IS NULL ORDER BY id`).map((r) => r.id)).toEqual(ids)
    }
    expect(env.rows('SELECT count(*) AS n FROM company')[0]!.n).toBe(1)
    const items = ((await emu.state('items')) as Record<string, unknown>[]).filter((r) => r.deleted !== true)
    const victim = (items[0]!.id ?? items[0]!._id ?? items[0]!.recordId) as string
    await emu.control('POST', '/mutate', { resource: 'items', op: 'delete', id: victim })
    await env.sync({ streams: [], reference: REFERENCE_STREAMS.filter((s) => s.name === 'items') })
    expect(env.rows(`SELECT id FROM items WHERE deleted_at IS NOT NULL`).map((r) => r.id)).toEqual([victim])
  })
})

describe('account metadata', () => {
  test('webhook endpoints, deliveries and API keys are mirrored without any secret', async () => {
    const emu = await emulatorEnv({ seed: 53, counts: { clients: 5, jobs: 2, invoices: 2 }, allowHttpWebhooks: true })
    const env = await syncEnv(emu)
    const created = await emu.api('POST', '/api/v1/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      events: ['client.created', 'client.updated'],
    })
    expect(created.status, JSON.stringify(created.body)).toBeLessThan(300)
    const secret = created.body.data.secret as string
    expect((await emu.api('POST', '/api/v1/clients', { firstName: 'Webhook', email: 'w@example.com' })).status).toBeLessThan(300)
    await emu.control('POST', '/deliveries/flush')
    const ctx = env.app.syncContext()
    const results = [await syncMetadata(ctx, webhooks), await syncMetadata(ctx, apiKeyMetadata)]
    expect(results.map((r) => r.outcome)).toEqual(['success', 'success'])
    expect(env.rows('SELECT url FROM webhook_endpoints')).toEqual([{ url: 'http://127.0.0.1:9/hook' }])
    expect(env.rows('SELECT count(*) AS n FROM webhook_deliveries')[0]!.n).toBeGreaterThanOrEqual(1)
    expect(env.rows('SELECT count(*) AS n FROM api_keys')[0]!.n).toBeGreaterThanOrEqual(1)
    const everything = JSON.stringify([
      ...env.rows('SELECT * FROM webhook_endpoints'),
      ...env.rows('SELECT * FROM api_keys'),
      ...env.rows('SELECT * FROM webhook_deliveries'),
    ])
    expect(everything).not.toContain(secret)
    expect(everything).not.toContain(emu.apiKey)
  })
})

describe('client custom fields', () => {
  test('client_properties names each property by the field id and label of the client schema', async () => {
    const emu = await emulatorEnv({ seed: 59, counts: { clients: 60, jobs: 2, invoices: 2, customRecords: 5 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: RECORD_STREAMS.filter((s) => s.name === 'clients'), objects: 'all' })
    const schema = (await emu.api('GET', '/api/v1/objects/client/schema')).body.data.fields as { id: string; label: string }[]
    const labels = new Map(schema.map((f) => [f.id, f.label]))
    const expected = ((await emu.state('clients')) as { id: string; deleted?: boolean; properties: { id: string; value: string }[] }[])
      .filter((c) => c.deleted !== true)
      .flatMap((c) => c.properties.map((p) => ({ client_id: c.id, field_id: p.id, field_label: labels.get(p.id) ?? null, value: p.value })))
      .sort((a, b) => (a.client_id + a.field_id).localeCompare(b.client_id + b.field_id))
    expect(expected.length).toBeGreaterThan(0)
    const rows = env.rows('SELECT client_id, field_id, field_label, value FROM client_properties ORDER BY client_id || field_id')
    expect(rows).toEqual(expected)
  })
})

describe('custom object lifecycle', () => {
  test('an object that leaves discovery is disabled, not deleted, and its records keep syncing', async () => {
    const emu = await emulatorEnv({ seed: 61, counts: { clients: 5, jobs: 2, invoices: 2, customRecords: 30 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [], objects: 'all' })
    await emu.control('POST', '/objects/inspections/enabled', { enabled: false })
    expect(await discovered(emu)).not.toContain('inspections')
    const rec = ((await emu.state('objects/inspections')) as { id: string; deleted?: boolean }[]).find((r) => r.deleted !== true)!
    await emu.control('POST', '/mutate', { resource: 'objects/inspections', op: 'update', id: rec.id, fields: {}, emit: false })
    const results = await env.sync({ streams: [], objects: 'all' })
    expect(results.every((r) => r.outcome === 'success')).toBe(true)
    expect(results.map((r) => r.stream)).toContain('objects:inspections')
    expect(env.rows(`SELECT disabled_at IS NOT NULL AS disabled FROM custom_object_types WHERE slug = 'inspections'`)).toEqual([
      { disabled: 1 },
    ])
    expect(await compareObjects(emu, env, 'inspections')).toEqual([])
    expect(env.rows(`SELECT count(*) AS n FROM obj_inspections`)[0]!.n).toBeGreaterThan(0)
    await emu.control('POST', '/objects/inspections/enabled', { enabled: true })
    await env.sync({ streams: [], objects: 'all' })
    expect(env.rows(`SELECT disabled_at FROM custom_object_types WHERE slug = 'inspections'`)).toEqual([{ disabled_at: null }])
  })

  test('a select option added upstream: the stored schema follows and records using it sync', async () => {
    const emu = await emulatorEnv({ seed: 67, counts: { clients: 5, jobs: 2, invoices: 2, customRecords: 20 } })
    const env = await syncEnv(emu)
    await env.sync({ streams: [], objects: ['equipment'] })
    const fields = (await emu.api('GET', '/api/v1/objects/equipment/schema')).body.data.fields as {
      name: string
      type: string
      system?: boolean
    }[]
    const select = fields.find((f) => f.type === 'select' && f.system !== true)!
    await emu.control('POST', `/objects/equipment/fields/options`, { name: select.name, value: 'quarantined' })
    const rec = ((await emu.state('objects/equipment')) as { id: string; deleted?: boolean }[]).find((r) => r.deleted !== true)!
    const patched = await emu.api('PATCH', `/api/v1/objects/equipment/${rec.id}`, { data: { [select.name]: 'quarantined' } })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    await env.sync({ streams: [], objects: ['equipment'] })
    const stored = JSON.parse(env.rows(`SELECT fields FROM custom_object_types WHERE slug = 'equipment'`)[0]!.fields as string) as {
      name: string
      options: { value: string }[] | null
    }[]
    expect(stored.find((f) => f.name === select.name)!.options!.map((o) => o.value)).toContain('quarantined')
    expect(env.rows(`SELECT "${select.name}" AS v FROM obj_equipment WHERE id = ?`, rec.id)).toEqual([{ v: 'quarantined' }])
  })
})
