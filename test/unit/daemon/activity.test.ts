// The demo's live line: what the daemon did between two marks, read from a real mirror.
import { afterEach, expect, test } from 'vitest'
import { activityMark, activitySince, formatActivity, WAIT_SHOWN_MS } from '../../../src/daemon/activity.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { WebhookMetrics } from '../../../src/webhooks/metrics.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
afterEach(async () => {
  await mirror?.close()
})

const iso = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
const at = (s: number) => Date.UTC(2026, 0, 1, 0, 0, s)

test('webhooks, finished runs and changes since the mark, every number labelled', async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const metrics = new WebhookMetrics()
  const state = new SyncStateStore(sqlite)
  const mark = activityMark(sqlite, metrics)
  metrics.intake.stored += 3
  metrics.processor.applied += 2
  for (const [stream, rows] of [
    ['clients', 4],
    ['jobs', 0],
    ['clients', 1],
  ] as const)
    state.finishRun(state.startRun('sweep', stream, iso(0)), { outcome: 'success', rows, requests: 1 }, iso(1))
  state.finishRun(state.startRun('reconcile', 'visits', iso(0)), { outcome: 'success', rows: 0, requests: 1 }, iso(1))
  const failed = state.startRun('sweep', 'invoices', iso(0))
  state.finishRun(failed, { outcome: 'error', rows: 0, requests: 2, error: 'GET /api/v1/invoices answered 500' }, iso(1))
  const log = sqlite.prepare(`INSERT INTO change_log (table_name, record_id, op, changed_at) VALUES ('clients', ?, 'upsert', ?)`)
  for (const id of ['a', 'b', 'c', 'd', 'e']) log.run(id, iso(1))

  const a = activitySince(sqlite, metrics, mark)
  expect(a).toMatchObject({ received: 3, applied: 2, changes: 5, failed: 0, running: [], waiting: [] })
  expect(formatActivity(a)).toBe(
    'webhooks: +3 received, +2 applied; sweeps: 4 finished, 5 requests, rows changed: clients 5; not successful: invoices error (GET /api/v1/invoices answered 500); ' +
      'reconciliations: 1 finished, 1 request, no rows changed; mirror: +5 rows changed',
  )
  // Nothing new: nothing reported twice.
  expect(activitySince(sqlite, metrics, a.next).runs).toEqual([])
})

test('a run still going (a trigger starved of budget) hides none of the runs that finished after it; it is reported once, when it ends', async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const metrics = new WebhookMetrics()
  const state = new SyncStateStore(sqlite)
  const mark = activityMark(sqlite, metrics)
  const trigger = state.startRun('trigger', 'calendar-a', iso(0))
  state.finishRun(state.startRun('sweep', 'clients', iso(1)), { outcome: 'success', rows: 2, requests: 1 }, iso(2))
  state.finishRun(state.startRun('sweep', 'jobs', iso(3)), { outcome: 'success', rows: 1, requests: 1 }, iso(4))
  // The trigger's request has waited since second 1 in the governor; a webhook follow-up since second 9.
  const waits = [
    { who: 'trigger calendar-a', priority: 'trigger' as const, since: at(1) },
    { who: 'webhook follow-up', priority: 'webhook' as const, since: at(9) },
    { who: 'sweep visits', priority: 'sweep' as const, since: at(10) - WAIT_SHOWN_MS + 1 },
  ]

  const a = activitySince(sqlite, metrics, mark, { now: at(10), waits })
  expect(a.runs.map((r) => `${r.kind} ${r.stream}`)).toEqual(['sweep clients', 'sweep jobs'])
  expect(a.running).toEqual([{ kind: 'trigger', stream: 'calendar-a', seconds: 10, waitingSeconds: 9 }])
  // The follow-up has waited 1 s and the sweep less than WAIT_SHOWN_MS: the budget's ordinary pace, not shown.
  expect(a.waiting).toEqual([])
  expect(formatActivity(a)).toBe(
    'webhooks: +0 received, +0 applied; sweeps: 2 finished, 2 requests, rows changed: clients 2, jobs 1; ' +
      'still going: trigger calendar-a for 10 s (waiting 9 s for the request budget); mirror: +0 rows changed',
  )

  // More sweeps finish while the trigger still waits: each is reported once.
  state.finishRun(state.startRun('sweep', 'visits', iso(11)), { outcome: 'success', rows: 0, requests: 1 }, iso(12))
  const b = activitySince(sqlite, metrics, a.next, { now: at(15), waits: waits.slice(0, 2) })
  expect(b.runs.map((r) => `${r.kind} ${r.stream}`)).toEqual(['sweep visits'])
  expect(b.waiting).toEqual([{ who: 'webhook follow-up', seconds: 6 }])
  expect(formatActivity(b)).toContain('; waiting for the request budget: webhook follow-up 6 s; ')

  // The trigger ends: reported now, and the sweeps after it are not reported again.
  state.finishRun(trigger, { outcome: 'success', rows: 0, requests: 1 }, iso(16))
  const c = activitySince(sqlite, metrics, b.next, { now: at(17) })
  expect(c.runs.map((r) => `${r.kind} ${r.stream}`)).toEqual(['trigger calendar-a'])
  expect(c.running).toEqual([])
  expect(c.next.reported).toEqual([])
  expect(activitySince(sqlite, metrics, c.next, { now: at(18) }).runs).toEqual([])
})

test("the demo's line ends with each stream's expected staleness for a change without a webhook", async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const metrics = new WebhookMetrics()
  const state = new SyncStateStore(sqlite)
  const mark = activityMark(sqlite, metrics)
  for (const start of [0, 10])
    state.finishRun(state.startRun('sweep', 'jobs', iso(start)), { outcome: 'success', rows: 0, requests: 1 }, iso(start + 2))
  const a = activitySince(sqlite, metrics, mark, { streams: ['jobs', 'visits'], now: at(13) })
  expect(a.staleness).toEqual([
    { stream: 'jobs', seconds: 7 },
    { stream: 'visits', seconds: null },
  ])
  expect(formatActivity(a)).toMatch(/; mirror: \+0 rows changed; staleness without a webhook: jobs 7 s, visits -$/)
})
