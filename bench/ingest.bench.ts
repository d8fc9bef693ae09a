// Ingest: rows/s from parsed pages into the mirror (newer-wins upsert, child rows, change_log,
// cursor per page) against a plain better-sqlite3 prepared-statement loop writing the same rows.
// Goal (issue 4): >= 0.6 of the plain loop, and >= 50,000 rows/s.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { jobs } from '../connectors/jobs.js'
import { openMirror } from '../src/store/mirror-database.js'
import { RecordWriter, type RecordRow } from '../src/store/record-writer.js'
import { SyncStateStore } from '../src/store/sync-state.js'
import { atLeast, type BenchResult } from './lib.js'

const N = 100_000
const PAGE = 100

function payload(i: number): Record<string, unknown> {
  const hex = i.toString(16).padStart(24, '0')
  return {
    id: hex,
    recordId: `00000000-0000-4000-8000-${hex.slice(-12)}`,
    jobNumber: `J-${i}`,
    clientId: 'c'.repeat(24),
    clientName: 'Ada Lovelace',
    jobPhone: { countryCode: '+1', number: '5550100', countryIdentifier: 'US' },
    jobAddress: { street: '1 Main St', city: 'Springfield', state: 'IL', country: 'US', zipCode: '62701', latitude: 39.8, longitude: -89.6 },
    assignedToTeams: ['a'.repeat(24), 'b'.repeat(24)],
    jobType: 'one-off',
    jobStatus: 'scheduled',
    startDateTime: '2026-01-02T09:00:00.000Z',
    endDateTime: '2026-01-02T11:00:00.000Z',
    timezone: 'America/Chicago',
    scheduleLater: false,
    anyTime: false,
    priority: 'medium',
    subTotal: 100,
    discount: 0,
    tax: 8.25,
    total: 108.25,
    notes: 'Gate code 1234',
    visits: [{ id: 'd'.repeat(24), visitStatus: 'scheduled' }],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
  }
}

async function withMirror<T>(fn: (m: Awaited<ReturnType<typeof openMirror>>) => T): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fsm-bench-'))
  const m = await openMirror(path.join(dir, 'mirror.db'))
  try {
    return fn(m)
  } finally {
    await m.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

function pages(): Record<string, unknown>[][] {
  const out: Record<string, unknown>[][] = []
  for (let i = 0; i < N; i += PAGE) out.push(Array.from({ length: PAGE }, (_, k) => payload(i + k)))
  return out
}

export default async function ingest(): Promise<BenchResult> {
  const parsed = pages()
  // Ours: map each page, newer-wins upsert with children and change_log, cursor in the same transaction.
  const ours = await withMirror((m) => {
    const writer = new RecordWriter(m.sqlite, 'jobs')
    const state = new SyncStateStore(m.sqlite)
    const commit = m.sqlite.transaction((rows: RecordRow[], cursor: unknown) => {
      writer.upsert(rows, { now: '2026-06-01T00:00:00.000Z', observedAt: '2026-06-01T00:00:00.000Z', replaceTies: true })
      state.setCursor('jobs', cursor, '2026-06-01T00:00:00.000Z')
    })
    const t0 = performance.now()
    for (const page of parsed) {
      const rows = page.map((p) => jobs.toRow(p))
      const last = rows[rows.length - 1]!
      commit(rows, { since: last.updated_at, seenIdsAtCursor: [last.id] })
    }
    return N / ((performance.now() - t0) / 1000)
  })
  // Baseline: the same rows (same mapping) through one plain prepared INSERT per row, one
  // transaction per page, no newer-wins, no children, no change_log.
  const plain = await withMirror((m) => {
    const sample = jobs.toRow(payload(0))
    const cols = ['id', 'updated_at', 'raw', 'synced_at', ...Object.keys(sample.columns)]
    const stmt = m.sqlite.prepare(`INSERT INTO jobs (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`)
    const commit = m.sqlite.transaction((rows: RecordRow[]) => {
      for (const r of rows) stmt.run(r.id, r.updated_at, r.raw, '2026-06-01T00:00:00.000Z', ...Object.values(r.columns))
    })
    const t0 = performance.now()
    for (const page of parsed) commit(page.map((p) => jobs.toRow(p)))
    return N / ((performance.now() - t0) / 1000)
  })
  const ratio = ours / plain
  return {
    name: 'ingest',
    issue: 4,
    figures: [
      { metric: 'ingest rate (100,000 job rows, pages of 100)', value: Math.round(ours), unit: 'rows/s', ...atLeast(ours, 50_000), baseline: `plain prepared loop ${Math.round(plain)} rows/s` },
      { metric: 'ingest rate / plain prepared loop', value: Number(ratio.toFixed(3)), unit: 'ratio', ...atLeast(ratio, 0.6) },
    ],
    notes: [
      'Both sides map payloads with the same connector; ours adds newer-wins, job_assignees, change_log and the cursor per page.',
    ],
  }
}
