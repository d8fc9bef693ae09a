// A custom object with more fields than a view has columns (MAX_VIEW_FIELDS): the sync warns naming
// the object, and its view, `fsm-sync query` on it and a default export all work, the view holding
// the first fields and custom_records.data the rest.
import path from 'node:path'
import { expect, test } from 'vitest'
import type { ExportManifest } from '../../../src/export/export-mirror.js'
import { MAX_VIEW_FIELDS } from '../../../src/store/repositories/custom-object-views.js'
import { cliInProcess } from '../../support/cli-in-process.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

test('an object of 2,000 fields: a warning naming it, then query and export read its view', async () => {
  const emu = await emulatorEnv({ counts: { clients: 2, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 1 } })
  const slug = ((await emu.api('GET', '/api/v1/objects')).body.data as { slug: string }[])[0]!.slug
  const existing = ((await emu.api('GET', `/api/v1/objects/${slug}/schema`)).body.data.fields as unknown[]).length
  for (let i = existing; i < 2000; i++) await emu.control('POST', `/objects/${slug}/fields`, { name: `extra_${i}` })
  const db = path.join(tempDir(), 'mirror.db')
  const vars = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '100000' })
  const sync = await runCli(['sync', '--stream', 'clients', '--stream', `objects:${slug}`], vars)
  expect(sync.code, sync.stderr).toBe(0)
  const view = `obj_${slug}`
  const warnings = sync.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: string; msg: string; slug?: string })
    .filter((l) => l.slug === slug && l.level === 'warn')
  expect(warnings.map((w) => w.msg)).toEqual([
    `custom object ${slug} has 2000 schema fields: its view ${view} has columns for the first ${MAX_VIEW_FIELDS} only, the other ${2000 - MAX_VIEW_FIELDS} are in custom_records.data (json_extract(data, '$."<field>"'))`,
  ])
  const query = await cliInProcess(['query', `SELECT * FROM ${view}`, '--json'], db)
  expect(query.code, query.stderr).toBe(0)
  expect(Object.keys((JSON.parse(query.stdout) as Record<string, unknown>[])[0]!)).toHaveLength(MAX_VIEW_FIELDS + 6)
  const out = await cliInProcess(['export', '--format', 'parquet', '--out', tempDir(), '--json'], db)
  expect(out.code, out.stderr).toBe(0)
  const manifest = JSON.parse(out.stdout) as ExportManifest
  expect(manifest.tables.find((t) => t.name === view)!.columns).toHaveLength(MAX_VIEW_FIELDS + 6)
}, 120_000)
