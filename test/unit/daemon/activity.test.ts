// The demo's live line: what the daemon did between two marks, read from a real mirror.
import { afterEach, expect, test } from 'vitest'
import { activityMark, activitySince, formatActivity } from '../../../src/daemon/activity.js'
import { SyncStateStore } from '../../../src/store/sync-state.js'
import { WebhookMetrics } from '../../../src/webhooks/metrics.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
afterEach(async () => {
  await mirror?.close()
})

test('webhooks, finished runs and changes since the mark; a run still going waits for its end', async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const metrics = new WebhookMetrics()
  const state = new SyncStateStore(sqlite)
  const now = new Date().toISOString()
  const mark = activityMark(sqlite, metrics)
  metrics.intake.stored += 3
  metrics.processor.applied += 2
  const swept = state.startRun('sweep', 'clients', now)
  state.finishRun(swept, { outcome: 'success', rows: 4, requests: 2 }, now)
  const going = state.startRun('sweep', 'jobs', now)
  const after = state.startRun('reconcile', 'visits', now)
  state.finishRun(after, { outcome: 'success', rows: 0, requests: 1 }, now)
  const log = sqlite.prepare(`INSERT INTO change_log (table_name, record_id, op, changed_at) VALUES ('clients', ?, 'upsert', ?)`)
  for (const id of ['a', 'b', 'c', 'd']) log.run(id, now)

  const a = activitySince(sqlite, metrics, mark)
  expect(a).toMatchObject({ received: 3, applied: 2, changes: 4, failed: 0 })
  expect(a.runs.map((r) => r.stream)).toEqual(['clients'])
  expect(formatActivity(a)).toBe('webhooks +3 received, +2 applied; sweep of 1 stream: clients 4; 2 requests; mirror +4 changes')

  state.finishRun(going, { outcome: 'interrupted', rows: 1, requests: 1, error: 'stopped' }, now)
  const b = activitySince(sqlite, metrics, a.next)
  expect(b).toMatchObject({ received: 0, applied: 0, changes: 0 })
  expect(b.runs.map((r) => `${r.kind} ${r.stream}`)).toEqual(['sweep jobs', 'reconcile visits'])
  expect(formatActivity(b)).toBe(
    'webhooks +0 received, +0 applied; sweep of 1 stream: jobs 1, jobs interrupted (stopped); 1 requests; reconcile of 1 stream: no changes; 1 requests; mirror +0 changes',
  )
})

test("the demo's line ends with each stream's expected staleness for a change without a webhook", async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const metrics = new WebhookMetrics()
  const state = new SyncStateStore(sqlite)
  const mark = activityMark(sqlite, metrics)
  const iso = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
  for (const start of [0, 10])
    state.finishRun(state.startRun('sweep', 'jobs', iso(start)), { outcome: 'success', rows: 0, requests: 1 }, iso(start + 2))
  const a = activitySince(sqlite, metrics, mark, { streams: ['jobs', 'visits'], now: Date.UTC(2026, 0, 1, 0, 0, 13) })
  expect(a.staleness).toEqual([
    { stream: 'jobs', seconds: 7 },
    { stream: 'visits', seconds: null },
  ])
  expect(formatActivity(a)).toMatch(/; mirror \+0 changes; staleness without a webhook: jobs 7 s, visits -$/)
})
