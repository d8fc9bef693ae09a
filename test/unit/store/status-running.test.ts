// `status` reads the runs in progress and a backfill's estimate from the rows a running sweep
// writes (sync-state.ts, setRunProgress), on a real mirror; a run whose process no longer beats is
// shown as gone, and left out of the estimate.
import { afterEach, expect, test } from 'vitest'
import { STATUS_STREAMS } from '../../../src/cli/status-streams.js'
import { RunOwnerStore } from '../../../src/store/repositories/run-owners.js'
import { statusReport } from '../../../src/store/read-models/status-report.js'
import { SyncStateStore } from '../../../src/store/repositories/sync-state.js'
import { tempMirror, type TempMirror } from '../../support/temp-mirror.js'

let mirror: TempMirror | undefined
afterEach(async () => {
  await mirror?.close()
})

const at = (s: number) => Date.UTC(2026, 0, 1, 0, 0, s)
const iso = (s: number) => new Date(at(s)).toISOString()

test('runs in progress with their progress; the backfill left over the live ones', async () => {
  mirror = await tempMirror()
  const { sqlite } = mirror
  const owners = new RunOwnerStore(sqlite)
  const identity = { pid: 1, host: 'h', pidNamespace: 'n' }
  const live = owners.register(identity, iso(0), iso(100))
  const gone = owners.register({ ...identity, pid: 2 }, iso(0), iso(0))
  const state = new SyncStateStore(sqlite, { ownerId: live })
  const progress = { rowsChanged: 0, requests: 0, backfill: true, budgetPerMinute: 60, at: iso(90) }
  const clients = state.startRun('sweep', 'clients', iso(60))
  state.setRunProgress(clients, {
    ...progress,
    rowsRead: 1_200,
    rowsChanged: 1_180,
    requests: 13,
    rowsRemaining: 4_800,
    requestsRemaining: 48,
  })
  const jobs = state.startRun('sweep', 'jobs', iso(95))
  state.setRunProgress(jobs, { ...progress, rowsRead: 0, rowsRemaining: null, requestsRemaining: null })
  state.startRun('trigger', 'calendar-a', iso(50))
  const stale = new SyncStateStore(sqlite, { ownerId: gone })
  const visits = stale.startRun('sweep', 'visits', iso(0))
  stale.setRunProgress(visits, { ...progress, rowsRead: 100, rowsRemaining: 900, requestsRemaining: 9 })
  // A run that ended keeps its own details, not the progress.
  const done = state.startRun('sweep', 'invoices', iso(10))
  state.setRunProgress(done, { ...progress, rowsRead: 10, rowsRemaining: 0, requestsRemaining: 0 })
  state.finishRun(done, { outcome: 'success', rows: 10, requests: 1 }, iso(11))
  state.setRunProgress(done, { ...progress, rowsRead: 99, rowsRemaining: 0, requestsRemaining: 0 })

  const report = statusReport(sqlite, at(100), STATUS_STREAMS)
  expect(report.running.map((r) => [r.stream, r.kind, r.runningSeconds, r.ownerGone, r.progress?.rowsRead ?? null])).toEqual([
    ['clients', 'sweep', 40, false, 1_200],
    ['jobs', 'sweep', 5, false, 0],
    ['calendar-a', 'trigger', 50, false, null],
    ['visits', 'sweep', 100, true, 100],
  ])
  expect(report.running[3]!.ownerSilentSeconds).toBe(100)
  expect(report.backfill).toEqual({
    streams: ['clients', 'jobs'],
    rowsRemaining: 4_800,
    requestsRemaining: 48,
    secondsRemaining: 48,
    budgetPerMinute: 60,
    sizeUnknown: ['jobs'],
  })
  expect(sqlite.prepare(`SELECT details FROM sync_runs WHERE id = ?`).pluck().get(done)).toBeNull()
})

test('no run going: no backfill', async () => {
  mirror = await tempMirror()
  const report = statusReport(mirror.sqlite, at(0), STATUS_STREAMS)
  expect(report.running).toEqual([])
  expect(report.backfill).toBeNull()
})
