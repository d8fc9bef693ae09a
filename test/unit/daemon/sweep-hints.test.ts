// What the continuous sweeps learn besides their own results: webhook deliveries stored since the
// last look, counted by the record stream their event names; and the staleness figure that status
// and /metrics show, from a stream's recent sweeps.
import { expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { webhookHints } from '../../../src/daemon/sweep-loop.js'
import { expectedStalenessSeconds, streamFreshness } from '../../../src/store/read-models/stream-freshness.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { tempMirror } from '../../support/temp-mirror.js'

test('webhook hints: deliveries since the last call, by stream; those from before the start are not news', async () => {
  const m = await tempMirror()
  try {
    let seq = 0
    const store = (event: string) =>
      m.sqlite
        .prepare(`INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, verified_with) VALUES (?, ?, ?, ?, '{}', 'test')`)
        .run(`d${++seq}`, seq, event, new Date().toISOString())
    store('job.updated')
    const hints = webhookHints(m.sqlite, RECORD_STREAMS)
    expect(hints()).toEqual(new Map())
    for (const e of ['job.updated', 'job.status_changed', 'visit.created', 'job.deleted', 'object.updated', 'invoice.paid']) store(e)
    expect(hints()).toEqual(
      new Map([
        ['jobs', 3],
        ['visits', 1],
        ['invoices', 1],
      ]),
    )
    expect(hints()).toEqual(new Map())
  } finally {
    await m.dispose()
  }
})

test('expected staleness: half the mean gap plus the mean duration; a late sweep makes it grow', () => {
  const at = (s: number) => 1_000_000 + s * 1000
  // Sweeps every 10 s, each taking 1 s; newest first.
  const sweeps = [30, 20, 10, 0].map((s) => ({ startedAt: at(s), endedAt: at(s + 1) }))
  expect(expectedStalenessSeconds(sweeps, at(35))).toBe(6)
  // 60 s after the last one ended, with no sweep since: 60 - 5.
  expect(expectedStalenessSeconds(sweeps, at(91))).toBe(55)
  expect(expectedStalenessSeconds(sweeps.slice(0, 1), at(40))).toBe(10)
  expect(expectedStalenessSeconds([], at(40))).toBeNull()
})

test('stream freshness reads successful sweeps only; a reconciliation has its own time', async () => {
  const m = await tempMirror()
  try {
    const state = new SyncStateStore(m.sqlite)
    const iso = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
    const run = (kind: 'sweep' | 'reconcile', outcome: 'success' | 'error', from: number, to: number) => {
      const id = state.startRun(kind, 'jobs', iso(from))
      state.finishRun(id, { outcome, rows: 0, requests: 1 }, iso(to))
    }
    run('sweep', 'success', 0, 2)
    run('sweep', 'success', 10, 12)
    run('reconcile', 'success', 13, 20)
    run('sweep', 'error', 21, 22)
    const [jobs, clients] = streamFreshness(m.sqlite, ['jobs', 'clients'], Date.UTC(2026, 0, 1, 0, 0, 15))
    expect(jobs).toEqual({ stream: 'jobs', lastSweptAt: Date.parse(iso(12)), lastReconciledAt: Date.parse(iso(20)), stalenessSeconds: 7 })
    expect(clients).toEqual({ stream: 'clients', lastSweptAt: null, lastReconciledAt: null, stalenessSeconds: null })
  } finally {
    await m.dispose()
  }
})
