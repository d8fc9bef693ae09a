// `fsm-sync export` against a mirror synced from the emulator, with the writer (the daemon's
// connection) still open: every format read back (DuckDB for Parquet and CSV, JSON.parse for JSONL)
// and compared with the mirror row by row; the changes after a seq; the CLI leaving the mirror as it was.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { clients, DATA_TABLES, jobs, STREAMS } from '../../../connectors/index.js'
import { REFERENCE_STREAMS } from '../../../connectors/reference.js'
import { mirrorCatalog } from '../../../src/catalog/catalog.js'
import { catalogDocument, rowSchema, type CatalogDocument, type JsonSchema } from '../../../src/catalog/json-schema.js'
import { cliInProcess } from '../../support/cli-in-process.js'
import {
  exportMirror,
  ExportPrunedError,
  ExportUsageError,
  type ExportedTable,
  type ExportFormat,
  type ExportManifest,
} from '../../../src/export/export-mirror.js'
import { changeTracking, type ColumnKind, type TableSpec } from '../../../src/model/table-spec.js'
import { ChangeLogConsumers } from '../../../src/store/repositories/change-log-consumers.js'
import { openMirror, type Mirror } from '../../../src/store/sqlite/mirror-database.js'
import { runRetention } from '../../../src/store/repositories/retention.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { syncEnv, type SyncEnv } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'

let emu: EmulatorEnv
let env: SyncEnv
let reader: Mirror
let duck: DuckDBConnection
let closeDuck: () => void

beforeAll(async () => {
  emu = await emulatorEnv({ counts: { clients: 10, jobs: 8, visitsPerJob: 1, invoices: 5, customRecords: 3 } })
  env = await syncEnv(emu)
  await env.sync({ reference: REFERENCE_STREAMS, objects: 'all' })
  // A reader beside the open writer, as beside a running daemon.
  reader = await openMirror(env.db, { readonly: true })
  const instance = await DuckDBInstance.create(':memory:')
  duck = await instance.connect()
  closeDuck = () => {
    duck.closeSync()
    instance.closeSync()
  }
})
afterAll(async () => {
  closeDuck()
  await reader.close()
  await env.close()
  await emu.close()
})

/** A value in one comparable form whatever file it came from: times as epoch ms, JSON parsed. */
function expected(kind: ColumnKind, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (kind) {
    case 'time': {
      const ms = typeof v === 'string' && v.endsWith('Z') ? Date.parse(v) : Number.NaN
      return Number.isFinite(ms) ? ms : null
    }
    case 'flag':
      return v === 1
    case 'json':
      return JSON.parse(v as string)
    case 'bytes':
      return (v as Buffer).toString('base64')
    default:
      return v
  }
}

function fromDuck(kind: ColumnKind, v: unknown): unknown {
  if (v === null) return null
  if (typeof v === 'bigint') return Number(v)
  return kind === 'json' ? JSON.parse(v as string) : v
}

function fromJsonl(kind: ColumnKind, v: unknown): unknown {
  if (v === null) return null
  return kind === 'time' ? Date.parse(v as string) : v
}

function mirrorRows(table: TableSpec): unknown[][] {
  const cols = table.columns.map((c) => `"${c.name}"`).join(', ')
  const order = (table.primaryKey.length > 0 ? table.primaryKey : table.columns.map((c) => c.name)).map((k) => `"${k}"`).join(', ')
  return env.app.mirror.sqlite
    .prepare(`SELECT ${cols} FROM "${table.name}"${order === '' ? '' : ` ORDER BY ${order}`}`)
    .raw(true)
    .all()
    .map((r) => (r as unknown[]).map((v, i) => expected(table.columns[i]!.kind, v)))
}

async function fileRows(format: ExportFormat, dir: string, t: ExportedTable): Promise<unknown[][]> {
  const file = path.join(dir, t.file)
  if (format === 'jsonl') {
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
    return lines.map((l) => {
      const o = JSON.parse(l) as Record<string, unknown>
      expect(Object.keys(o)).toEqual(t.columns.map((c) => c.name))
      return t.columns.map((c) => fromJsonl(c.kind, o[c.name]))
    })
  }
  const select = t.columns
    .map((c) => {
      const id = `"${c.name}"`
      return c.kind === 'time' ? `epoch_ms(${id})` : c.kind === 'json' ? `CAST(${id} AS VARCHAR)` : id
    })
    .join(', ')
  const lit = `'${file}'`
  // CSV: the declared types; a quoted empty field is an empty string, an unquoted one NULL.
  const source =
    format === 'parquet'
      ? `read_parquet(${lit})`
      : `read_csv(${lit}, header = true, auto_detect = false, allow_quoted_nulls = false, columns = {${t.columns.map((c) => `'${c.name}': '${c.type}'`).join(', ')}})`
  const result = await duck.runAndReadAll(`SELECT ${select} FROM ${source}`)
  return result.getRowsJS().map((r) => r.map((v, i) => fromDuck(t.columns[i]!.kind, v)))
}

/** The keywords rowSchema uses, checked: type (with integer), not, required, additionalProperties. */
function schemaProblems(schema: JsonSchema, row: Record<string, unknown>): string[] {
  const properties = schema.properties as Record<string, JsonSchema>
  const problems: string[] = []
  const typeOf = (v: unknown) =>
    v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v
  for (const name of schema.required as string[]) if (!(name in row)) problems.push(`${name} missing`)
  for (const [name, value] of Object.entries(row)) {
    const p = properties[name]
    if (p === undefined) {
      problems.push(`${name} not in the schema`)
      continue
    }
    const allowed = p.type === undefined ? undefined : ([] as string[]).concat(p.type as string | string[])
    const actual = typeOf(value)
    if (allowed !== undefined && !allowed.includes(actual) && !(actual === 'integer' && allowed.includes('number')))
      problems.push(`${name}: ${actual} is not ${allowed.join('|')}`)
    if (p.not !== undefined && value === null) problems.push(`${name}: null`)
  }
  return problems
}

/** The CLI in this process (no child to start) against the test's mirror. */
const cli = (args: string[]) => cliInProcess(args, env.db)

function manifestOf(dir: string): ExportManifest {
  return JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as ExportManifest
}

describe('fsm-sync export', () => {
  test.each(['parquet', 'csv', 'jsonl'] as const)('%s: every data table, read back, equals the mirror row by row', async (format) => {
    const catalog = mirrorCatalog(reader.sqlite)
    const dir = tempDir()
    const manifest = await exportMirror(reader.sqlite, catalog, { format, outDir: dir, now: Date.now() })
    expect(manifestOf(dir)).toEqual(manifest)
    expect(manifest.seq).toBe(env.rows('SELECT max(seq) AS s FROM change_log')[0]!.s)
    expect(manifest.tables.map((t) => t.name)).toEqual(catalog.filter((t) => t.role === 'data').map((t) => t.name))
    // The custom objects' views are exported with their typed columns.
    expect(manifest.tables.some((t) => t.name.startsWith('obj_') && t.rows > 0)).toBe(true)
    let rows = 0
    for (const t of manifest.tables) {
      const spec = catalog.find((c) => c.name === t.name)!
      const want = mirrorRows(spec)
      expect(await fileRows(format, dir, t), `${format} ${t.name}`).toEqual(want)
      expect(t.rows).toBe(want.length)
      rows += t.rows
    }
    expect(manifest.tables.find((t) => t.name === 'jobs')!.rows).toBe(8)
    // Parquet columns carry the declared types (TIMESTAMPTZ, BOOLEAN, JSON, ...), not text.
    if (format === 'parquet')
      for (const t of manifest.tables) {
        const described = await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${path.join(dir, t.file)}')`)
        const types = described.getRowObjectsJS().map((r) => (r.column_type as string).replace('TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ'))
        expect(types, t.name).toEqual(t.columns.map((c) => c.type))
      }
    // JSON Lines rows are what `fsm-sync schema --json` says they are.
    if (format === 'jsonl')
      for (const t of manifest.tables) {
        const schema = rowSchema(catalog.find((c) => c.name === t.name)!)
        for (const line of readFileSync(path.join(dir, t.file), 'utf8')
          .split('\n')
          .filter((l) => l !== ''))
          expect(schemaProblems(schema, JSON.parse(line)), t.name).toEqual([])
      }
    expect(rows).toBeGreaterThan(50)
  })

  test('one snapshot: what the writer commits while the export runs is in none of its files', async () => {
    const [{ s: seq }] = env.rows('SELECT max(seq) AS s FROM change_log') as [{ s: number }]
    const [item] = env.rows('SELECT id, name FROM items ORDER BY id LIMIT 1') as [{ id: string; name: string }]
    const dir = tempDir()
    const manifest = await exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), {
      format: 'parquet',
      outDir: dir,
      tables: ['taxes', 'items'],
      now: 0,
      // Between the two files, the daemon's connection changes an item and logs the change.
      onTable: (t) => {
        if (t.name !== 'taxes') return
        const w = env.app.mirror.sqlite
        w.transaction(() => {
          w.prepare(`UPDATE items SET name = 'renamed during the export' WHERE id = ?`).run(item.id)
          w.prepare(
            `INSERT INTO change_log (table_name, record_id, op, updated_at, changed_at) VALUES ('items', ?, 'upsert', NULL, ?)`,
          ).run(item.id, new Date().toISOString())
        })()
      },
    })
    expect(manifest.seq).toBe(seq)
    const read = await duck.runAndReadAll(`SELECT name FROM read_parquet('${path.join(dir, 'items.parquet')}') WHERE id = '${item.id}'`)
    expect(read.getRowsJS()).toEqual([[item.name]])
    expect(env.rows('SELECT name FROM items WHERE id = ?', item.id)).toEqual([{ name: 'renamed during the export' }])
  })

  test('--after-seq: the latest change of each record changed since, with its row; children of changed parents', async () => {
    const [before] = env.rows('SELECT max(seq) AS s FROM change_log') as { s: number }[]
    const [victim] = env.rows('SELECT id FROM clients WHERE deleted_at IS NULL ORDER BY id LIMIT 1') as { id: string }[]
    const [job] = env.rows('SELECT job_id AS id FROM job_assignees LIMIT 1') as { id: string }[]
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'update', count: 2 })
    await emu.control('POST', '/mutate', { resource: 'jobs', op: 'update', id: job!.id, fields: {} })
    await emu.control('POST', '/mutate', { resource: 'clients', op: 'delete', id: victim!.id })
    await env.sync({ streams: [clients, jobs] })
    // 1 of 10 live clients: within the reconciliation's guard (10 %).
    expect((await env.reconcile([clients]))[0]!.outcome).toBe('success')

    const dir = tempDir()
    const manifest = await exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), {
      format: 'jsonl',
      outDir: dir,
      afterSeq: before!.s,
      now: Date.now(),
    })
    expect(manifest.afterSeq).toBe(before!.s)
    expect(manifest.tables.map((t) => t.name)).toEqual(['clients', 'jobs', 'job_assignees'])
    const read = (name: string) =>
      readFileSync(path.join(dir, `${name}.jsonl`), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    const latest = (table: string) =>
      env.rows(
        `SELECT l.record_id AS id, l.seq, l.op FROM change_log l
         WHERE l.table_name = ? AND l.seq > ? AND l.seq = (SELECT max(seq) FROM change_log c WHERE c.table_name = l.table_name AND c.record_id = l.record_id)
         ORDER BY l.seq`,
        table,
        before!.s,
      )
    const changedClients = read('clients')
    expect(changedClients.map((r) => ({ id: r.id, seq: r.change_seq, op: r.change_op }))).toEqual(latest('clients'))
    const deleted = changedClients.find((r) => r.id === victim!.id)!
    expect(deleted.change_op).toBe('delete')
    expect(typeof deleted.deleted_at).toBe('string')
    // Each row is the record as the mirror holds it, with the change columns in front.
    const full = env.rows('SELECT * FROM clients WHERE id = ?', victim!.id)[0]!
    expect(deleted.raw).toEqual(JSON.parse(full.raw as string))
    // Every row validates against the schema the catalog advertises for the table's incremental mode.
    const streams = catalogDocument(mirrorCatalog(reader.sqlite)).streams
    for (const t of manifest.tables) {
      const stream = streams.find((s) => s.name === t.name)!
      expect(stream.supported_sync_modes).toContain('incremental')
      expect(stream.default_cursor_field).toEqual(['change_seq'])
      for (const row of read(t.name)) expect(schemaProblems(stream.json_schema, row)).toEqual([])
    }
    expect(read('jobs').map((r) => r.id)).toEqual(latest('jobs').map((r) => r.id))
    expect(read('job_assignees').map((r) => r.user_id)).toEqual(
      env.rows('SELECT user_id FROM job_assignees WHERE job_id = ? ORDER BY user_id', job!.id).map((r) => r.user_id),
    )
    // A state table has no change records to read.
    await expect(
      exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), {
        format: 'jsonl',
        outDir: tempDir(),
        afterSeq: 0,
        tables: ['sync_runs'],
        now: 0,
      }),
    ).rejects.toThrow(ExportUsageError)
    // Nor does a data table kept whole: an incremental file of it would be silently empty.
    await expect(
      exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), {
        format: 'jsonl',
        outDir: tempDir(),
        afterSeq: 0,
        tables: ['custom_object_types'],
        now: 0,
      }),
    ).rejects.toThrow(/custom_object_types is kept whole/)
  })

  test('schema: the declared tables and views and the custom-object views of the mirror, as text and as JSON Schemas', async () => {
    const json = await cli(['schema', '--json', '--stream', 'objects'])
    expect(json.code).toBe(0)
    const doc = JSON.parse(json.stdout) as CatalogDocument
    const views = env.rows(`SELECT name FROM sqlite_master WHERE type = 'view' AND name LIKE 'obj\\_%' ESCAPE '\\' ORDER BY name`)
    expect(views.length).toBeGreaterThan(0)
    const objects = STREAMS.find((s) => s.kind === 'objects')!
    expect(doc.streams.map((s) => s.name)).toEqual([...objects.tables.map((t) => t.name), ...views.map((v) => v.name)])
    expect(new Set(doc.streams.map((s) => s['x-fsm-stream']))).toEqual(new Set(['objects']))
    // Only what export --after-seq reads changes of is incremental: custom_records, not the types
    // (kept whole: their writes are not in change_log) and not the views.
    for (const s of doc.streams)
      expect([s.name, s.supported_sync_modes]).toEqual([
        s.name,
        s.name === 'custom_records' ? ['full_refresh', 'incremental'] : ['full_refresh'],
      ])
    const kinds = new Map(env.rows(`SELECT name, type FROM sqlite_master`).map((r) => [r.name as string, r.type as string]))
    for (const s of catalogDocument(mirrorCatalog(reader.sqlite)).streams) {
      const table = mirrorCatalog(reader.sqlite).find((t) => t.name === s.name)!
      const changes = kinds.get(s.name) === 'table' && table.role === 'data' && changeTracking(table, DATA_TABLES) !== 'whole'
      expect([s.name, s.supported_sync_modes.includes('incremental')]).toEqual([s.name, changes])
    }
    // A view's schema has exactly the columns SQLite reports for it.
    for (const v of views) {
      const columns = env.rows(`SELECT name FROM pragma_table_info(?)`, v.name).map((c) => c.name)
      expect(Object.keys(doc.streams.find((s) => s.name === v.name)!.json_schema.properties as object)).toEqual(columns)
    }
    const text = await cli(['schema', '--stream', 'jobs'])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^jobs \(data; key id\)\n/)
    expect(text.stdout).toMatch(/^ {2}job_status +TEXT +text +yes /m)
    const bad = await cli(['schema', '--stream', 'nope'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--stream nope: no such stream or table; streams: clients, jobs/)
  })

  test('the CLI exports with the writer open, changes nothing in the mirror, and refuses an unknown table', async () => {
    // Every table's rows but run_owners: this test process owns the writer, and its heartbeat (one
    // UPDATE every 10 s) may land while a slow export runs; the files would then differ.
    const digest = () => {
      const hash = createHash('sha256')
      const tables = reader.sqlite
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'run_owners' ORDER BY name`)
        .pluck()
        .all() as string[]
      for (const t of tables)
        hash
          .update(t)
          .update(
            JSON.stringify(reader.sqlite.prepare(`SELECT * FROM "${t}"`).raw(true).all(), (_k, v: unknown) =>
              typeof v === 'bigint' ? String(v) : v,
            ),
          )
      return hash.digest('hex')
    }
    const before = digest()
    const dir = tempDir()
    const ok = await runCli(
      ['export', '--format', 'parquet', '--out', dir, '--tables', 'clients,invoice_items', '--json'],
      cleanEnv({ FSM_DB: env.db }),
    )
    expect(ok.stderr).toBe('')
    expect(ok.code).toBe(0)
    const manifest = JSON.parse(ok.stdout) as ExportManifest
    expect(manifest.tables.map((t) => [t.name, t.file])).toEqual([
      ['clients', 'clients.parquet'],
      ['invoice_items', 'invoice_items.parquet'],
    ])
    expect(manifestOf(dir)).toEqual(manifest)
    expect(digest()).toEqual(before)
    // The files hold the mirror's data and get its mode (FSM_DB_MODE, 0640): nothing for others.
    for (const f of ['clients.parquet', 'manifest.json']) expect(statSync(path.join(dir, f)).mode & 0o777).toBe(0o640)

    const bad = await cli(['export', '--format', 'csv', '--out', dir, '--tables', 'clients,nope'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--tables: no such table: nope; valid: clients, /)
  })

  test('--after-seq refuses changes retention pruned, in the API and the CLI (exit 1)', async () => {
    // A copy of the mirror, pruned as retention prunes it (change_log: 30 days, past every consumer).
    const db = path.join(tempDir(), 'pruned.db')
    env.app.mirror.sqlite.exec(`VACUUM INTO '${db}'`)
    const copy = await openMirror(db)
    try {
      const last = copy.sqlite.prepare('SELECT max(seq) FROM change_log').pluck().get() as number
      const kept = last - 5
      const later = Date.now() + 40 * 86_400_000
      const consumers = new ChangeLogConsumers(copy.sqlite)
      consumers.add('loader', 'user', new Date().toISOString(), kept)
      const settings = {
        deliveriesDays: 'off',
        deliveryIdsDays: 'off',
        runsDays: 'off',
        calendarChangesDays: 'off',
        changeLogDays: 30,
        changeLogHoldDays: 'off',
        batchRows: 1000,
        vacuumPages: 0,
      } as const
      expect((await runRetention(copy.sqlite, later, settings)).removed.change_log).toBe(kept)
      const exportAfter = (afterSeq: number) =>
        exportMirror(copy.sqlite, (sqlite) => mirrorCatalog(sqlite), { format: 'jsonl', outDir: tempDir(), afterSeq, now: 0 })
      // The consumer's position: every change after it is kept.
      expect((await exportAfter(kept)).seq).toBe(last)
      await expect(exportAfter(kept - 1)).rejects.toThrow(ExportPrunedError)
      await expect(exportAfter(kept - 1)).rejects.toThrow(
        `changes after ${kept - 1} were pruned (the oldest kept is ${kept + 1}); run a full export, and register the loader as a consumer (fsm-sync consumers add NAME) so retention waits for it`,
      )
      const cliRefused = await cliInProcess(['export', '--format', 'csv', '--out', tempDir(), '--after-seq', '0'], db)
      expect(cliRefused.code).toBe(1)
      expect(cliRefused.stderr).toMatch(/changes after 0 were pruned \(the oldest kept is \d+\); run a full export/)

      // Nothing kept at all: the changes since any earlier seq are gone; the last seq still exports (nothing changed).
      consumers.remove('loader')
      await runRetention(copy.sqlite, later, settings)
      expect(copy.sqlite.prepare('SELECT count(*) FROM change_log').pluck().get()).toBe(0)
      await expect(exportAfter(kept)).rejects.toThrow(/the oldest kept is none/)
      expect((await exportAfter(last)).tables).toEqual([])
    } finally {
      await copy.close()
    }
  })

  test('--consumer: a registered consumer, --after-seq not past its position, acknowledged at the snapshot seq', async () => {
    const db = path.join(tempDir(), 'consumer.db')
    env.app.mirror.sqlite.exec(`VACUUM INTO '${db}'`)
    const copy = await openMirror(db)
    try {
      const last = copy.sqlite.prepare('SELECT max(seq) FROM change_log').pluck().get() as number
      const consumers = new ChangeLogConsumers(copy.sqlite)
      consumers.add('loader', 'user', new Date().toISOString(), last - 2)
      const run = (...extra: string[]) => cliInProcess(['export', '--format', 'jsonl', '--out', tempDir(), ...extra], db)
      const unknown = await run('--consumer', 'nobody')
      expect([unknown.code, unknown.stderr]).toEqual([
        2,
        expect.stringMatching(/no consumer named nobody; register it first \(fsm-sync consumers add nobody\)/),
      ])
      const past = await run('--after-seq', String(last), '--consumer', 'loader')
      expect([past.code, past.stderr]).toEqual([
        2,
        expect.stringMatching(new RegExp(`past consumer loader's position \\(seq ${last - 2}\\)`)),
      ])
      expect(consumers.get('loader')!.seq).toBe(last - 2)
      const ok = await run('--after-seq', String(last - 2), '--consumer', 'loader', '--json')
      expect(ok.code).toBe(0)
      expect((JSON.parse(ok.stdout) as ExportManifest).seq).toBe(last)
      expect(consumers.get('loader')!.seq).toBe(last)
    } finally {
      await copy.close()
    }
  })

  test('files are written in a folder closed to others, a created --out is 0750, and files of the previous export go', async () => {
    const parent = tempDir()
    const dir = path.join(parent, 'new', 'out')
    const umask = process.umask(0)
    const seen: number[] = []
    try {
      await exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), {
        format: 'parquet',
        outDir: dir,
        tables: ['taxes', 'items'],
        now: 0,
        // While the export runs, its files are written in a folder only the owner can enter.
        onTable: () => {
          const work = readdirSync(dir).filter((f) => f.startsWith('.export-'))
          expect(work).toHaveLength(1)
          seen.push(statSync(path.join(dir, work[0]!)).mode & 0o777)
        },
      })
    } finally {
      process.umask(umask)
    }
    expect(seen).toEqual([0o700, 0o700])
    expect(statSync(dir).mode & 0o777).toBe(0o750)
    for (const f of ['taxes.parquet', 'items.parquet', 'manifest.json']) expect(statSync(path.join(dir, f)).mode & 0o777).toBe(0o640)
    writeFileSync(path.join(dir, 'notes.txt'), 'not an export file')

    // The next export into the folder: what the previous manifest listed and this one does not, goes.
    await exportMirror(reader.sqlite, mirrorCatalog(reader.sqlite), { format: 'parquet', outDir: dir, tables: ['items'], now: 0 })
    expect(readdirSync(dir).sort()).toEqual(['items.parquet', 'manifest.json', 'notes.txt'])
    expect(manifestOf(dir).tables.map((t) => t.file)).toEqual(['items.parquet'])
  })
})
