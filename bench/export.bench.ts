// `fsm-sync export`: rows per second into Parquet, CSV and JSON Lines from a mirror of jobs (about
// 1 KB of payload each, two assignees), read on a read-only connection beside the open writer as
// beside a running daemon; and an incremental export of the last tenth changed. EXPORT_BENCH_JOBS
// changes the size. Informative figures: no goal is set for them.
import { statSync } from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { jobs } from '../connectors/jobs.js'
import { mirrorCatalog } from '../src/catalog/catalog.js'
import { exportMirror, type ExportFormat } from '../src/export/export-mirror.js'
import { openMirror } from '../src/store/sqlite/mirror-database.js'
import { RecordWriter } from '../src/store/repositories/record-writer.js'
import { tempDir } from '../test/support/temp-mirror.js'
import type { BenchResult, Figure } from './lib.js'

const JOBS = Number(process.env.EXPORT_BENCH_JOBS ?? 50_000)
const BATCH = 1_000

function job(n: number, updatedAt: string): Record<string, unknown> {
  const id = n.toString(16).padStart(24, '0')
  return {
    id,
    jobNumber: `J-${n}`,
    clientId: (n % 997).toString(16).padStart(24, 'c'),
    clientName: 'Ada Lovelace',
    jobStatus: ['scheduled', 'in_progress', 'completed'][n % 3],
    jobAddress: { street: `${n} Main St`, city: 'Springfield', state: 'IL', country: 'US', zipCode: '62701' },
    jobPhone: { countryCode: '+1', number: `555${String(n).padStart(7, '0')}`, countryIdentifier: 'us' },
    assignedToTeams: ['a'.repeat(24), 'b'.repeat(24)],
    startDateTime: new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString(),
    scheduleLater: n % 2 === 0,
    subTotal: n / 7,
    total: n / 6,
    notes: 'x'.repeat(600),
    createdAt: '2025-12-01T00:00:00.000Z',
    updatedAt,
  }
}

export default async function bench(): Promise<BenchResult> {
  const dir = tempDir()
  const db = path.join(dir, 'mirror.db')
  const writer = await openMirror(db)
  const records = new RecordWriter(writer.sqlite, 'jobs')
  const write = (from: number, to: number, at: string) => {
    for (let start = from; start < to; start += BATCH) {
      const rows = []
      for (let n = start; n < Math.min(to, start + BATCH); n++) rows.push(jobs.toRow(job(n, at)))
      records.upsert(rows, { now: at, replaceTies: true })
    }
  }
  write(0, JOBS, '2026-01-01T00:00:00.000Z')
  const seq = Number(writer.sqlite.prepare('SELECT max(seq) FROM change_log').pluck().get())
  write(JOBS - JOBS / 10, JOBS, '2026-01-02T00:00:00.000Z')
  const reader = await openMirror(db, { readonly: true })
  const catalog = mirrorCatalog(reader.sqlite)
  const figures: Figure[] = []
  try {
    for (const format of ['parquet', 'csv', 'jsonl'] as ExportFormat[]) {
      const out = path.join(dir, format)
      const t0 = performance.now()
      const manifest = await exportMirror(reader.sqlite, catalog, {
        format,
        outDir: out,
        tables: ['jobs', 'job_assignees'],
        now: Date.now(),
      })
      const seconds = (performance.now() - t0) / 1000
      const rows = manifest.tables.reduce((n, t) => n + t.rows, 0)
      const bytes = manifest.tables.reduce((n, t) => n + statSync(path.join(out, t.file)).size, 0)
      figures.push({
        metric: `${format}: rows per second (jobs + job_assignees, ${rows} rows)`,
        value: Math.round(rows / seconds),
        unit: 'rows/s',
        goal: '',
      })
      figures.push({ metric: `${format}: bytes written per job`, value: Math.round(bytes / JOBS), unit: 'B', goal: '' })
    }
    const t0 = performance.now()
    const inc = await exportMirror(reader.sqlite, catalog, {
      format: 'parquet',
      outDir: path.join(dir, 'inc'),
      tables: ['jobs'],
      afterSeq: seq,
      now: Date.now(),
    })
    figures.push({
      metric: `parquet --after-seq: seconds for the last tenth changed (${inc.tables[0]!.rows} jobs)`,
      value: Math.round((performance.now() - t0) / 10) / 100,
      unit: 's',
      goal: '',
    })
  } finally {
    await reader.close()
    await writer.close()
  }
  return {
    name: 'export',
    topic: 'export',
    figures,
    notes: [`${JOBS} jobs of about 1 KB payload, two assignees each; one process, the writer open beside the read-only exporter`],
  }
}
