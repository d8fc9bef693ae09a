// The metrics text: request counters from the client hook, run observations, scrape-time gauges.
import { expect, test } from 'vitest'
import { packageInfo } from '../../../src/config/package-info.js'
import { DaemonMetrics } from '../../../src/daemon/daemon-metrics.js'
import { exposition, ProcessMetrics } from '../../../src/daemon/process-metrics.js'
import { parseExposition } from '../../support/prometheus-text.js'
import { formatTrigger, triggerDetails } from '../../../src/sync/integration-triggers.js'
import { probeMirror } from '../../../src/daemon/mirror-probe.js'
import { tempMirror } from '../../support/temp-mirror.js'

const governor = () => ({
  limit: 60,
  effectiveLimit: 54,
  sentLastMinute: 12,
  inFlight: 2,
  queued: { webhook: 0, sweep: 0, trigger: 0, reconcile: 0 },
  pausedUntil: null,
})

test('requests, 429s, retries, runs, staleness, budget and webhook counters', async () => {
  const m = new DaemonMetrics({
    governor,
    webhookCounters: () => ({ webhook_intake_stored_total: 7 }),
    webhookBacklog: () => 3,
    checkpoints: () => ({ passes: 40, busy: 1, errors: 0, logFrames: 120, copiedFrames: 9_000, micros: 5_000 }),
  })
  m.onResponse({ route: 'GET /api/v1/jobs', status: 200, attempt: 1, durationMs: 5 })
  m.onResponse({ route: 'GET /api/v1/jobs', status: 429, attempt: 1, durationMs: 5 })
  m.onResponse({ route: 'GET /api/v1/jobs', status: 200, attempt: 2, durationMs: 5 })
  m.seedLastSuccess([{ stream: 'clients', lastSuccessAt: '2026-01-01T00:00:00.000Z', lastError: null, lastErrorAt: null, lastRunId: 1 }])
  m.observeRun({ stream: 'jobs', kind: 'sweep', outcome: 'success', rows: 4, requests: 2, durationMs: 1500 }, 'sweep', 1_800_000_000_000)
  const text = await m.text()
  expect(text).toContain('fsm_api_requests_total{route="GET /api/v1/jobs",status="200"} 2')
  expect(text).toContain('fsm_api_rate_limited_total{route="GET /api/v1/jobs"} 1')
  expect(text).toContain('fsm_api_retries_total{route="GET /api/v1/jobs"} 1')
  expect(text).toContain('fsm_rows_written_total{stream="jobs",kind="sweep"} 4')
  expect(text).toContain('fsm_run_duration_seconds_bucket{le="5",stream="jobs",kind="sweep"} 1')
  expect(text).toContain('fsm_last_success_timestamp_seconds{stream="jobs"} 1800000000')
  expect(text).toContain(`fsm_last_success_timestamp_seconds{stream="clients"} ${Date.parse('2026-01-01T00:00:00.000Z') / 1000}`)
  expect(text).toContain('fsm_request_budget_used 12')
  expect(text).toContain('fsm_request_budget_effective_limit 54')
  expect(text).toContain('fsm_webhook_intake_stored_total 7')
  expect(text).toContain('fsm_webhook_inbox_backlog 3')
  expect(text).toContain('fsm_mirror_checkpoint_passes_total 40')
  expect(text).toContain('fsm_mirror_checkpoint_frames_total 9000')
  expect(text).toContain('fsm_mirror_wal_frames 120')
  // Scraping twice does not double the mirrored counters.
  expect(await m.text()).toContain('fsm_webhook_intake_stored_total 7')
})

test("last success is each stream's own sweep end, reconciliations have their own series, staleness and the sweeps' share are read when scraped", async () => {
  const m = new DaemonMetrics({
    governor,
    freshness: () => [
      { stream: 'jobs', lastSweptAt: 1_800_000_000_000, lastReconciledAt: null, stalenessSeconds: 3.14 },
      { stream: 'taxes', lastSweptAt: null, lastReconciledAt: null, stalenessSeconds: null },
    ],
    sweepShare: () => ({ used: 17, limit: 51 }),
  })
  m.seedFreshness([{ stream: 'visits', lastSweptAt: 1_700_000_000_000, lastReconciledAt: 1_600_000_000_000, stalenessSeconds: 5 }])
  // A batch observed after its last run: each run's own end counts, not the time of observation.
  m.observeRun({ stream: 'clients', kind: 'sweep', outcome: 'success', rows: 0, requests: 1, durationMs: 900, endedAt: 1_750_000_000_000 })
  m.observeRun({
    stream: 'clients',
    kind: 'reconcile',
    outcome: 'success',
    rows: 0,
    requests: 3,
    durationMs: 900,
    endedAt: 1_760_000_000_000,
  })
  const text = await m.text()
  expect(text).toContain('fsm_last_success_timestamp_seconds{stream="clients"} 1750000000')
  expect(text).toContain('fsm_last_reconcile_success_timestamp_seconds{stream="clients"} 1760000000')
  expect(text).toContain('fsm_last_success_timestamp_seconds{stream="visits"} 1700000000')
  expect(text).toContain('fsm_last_reconcile_success_timestamp_seconds{stream="visits"} 1600000000')
  expect(text).toContain('fsm_stream_staleness_seconds{stream="jobs"} 3.1')
  expect(text).not.toContain('fsm_stream_staleness_seconds{stream="taxes"}')
  expect(text).toContain('fsm_sweep_budget_limit 51')
  expect(text).toContain('fsm_sweep_budget_used 17')
})

test("one exposition of the process and its accounts: each family's HELP and TYPE once, each account's series labelled, the process's not", async () => {
  const account = (id: string) =>
    new DaemonMetrics({ account: id, governor, webhookCounters: () => ({ webhook_intake_stored_total: id.length }) })
  const [north, south] = [account('north'), account('south-2')]
  const proc = new ProcessMetrics()
  proc.listener.unknownAccount = 3
  for (const m of [north, south]) m.observeRun({ stream: 'jobs', kind: 'sweep', outcome: 'success', rows: 1, requests: 1, durationMs: 200 })
  const text = await exposition([proc.registry, north.registry, south.registry])
  const { families, samples } = parseExposition(text)
  expect(families.get('fsm_run_duration_seconds')).toEqual({ type: 'histogram', help: 'Duration of sweeps, reconciliations and triggers' })
  expect(text).toContain('fsm_run_duration_seconds_bucket{le="0.5",account="north",stream="jobs",kind="sweep"} 1')
  expect(text).toContain('fsm_run_duration_seconds_bucket{le="0.5",account="south-2",stream="jobs",kind="sweep"} 1')
  expect(text).toContain('fsm_webhook_intake_stored_total{account="north"} 5\nfsm_webhook_intake_stored_total{account="south-2"} 7\n')
  expect(text).toContain(`fsm_build_info{version="${packageInfo().version}",node="${process.versions.node}"} 1`)
  expect(text).toContain('fsm_webhook_intake_unknown_account_total 3')
  const unlabelled = samples.filter((s) => s.labels.account === undefined).map((s) => s.name)
  expect(unlabelled.sort()).toEqual([
    'fsm_build_info',
    'fsm_webhook_intake_connections_dropped_total',
    'fsm_webhook_intake_unknown_account_total',
  ])
  // The same account twice would repeat its series: an account is served once or not at all.
  const alone = parseExposition(await exposition([proc.registry, south.registry])).samples
  expect(alone.filter((s) => s.labels.account === 'north')).toEqual([])
  expect(alone.filter((s) => s.labels.account === 'south-2').length).toBe(samples.filter((s) => s.labels.account === 'south-2').length)
})

test('an account whose metrics fail to collect (its mirror closed as it left) is left out of the scrape, the others served', async () => {
  const ok = new DaemonMetrics({ account: 'ok', governor })
  const closing = new DaemonMetrics({
    account: 'closing',
    governor: () => {
      throw new TypeError('The database connection is not open')
    },
  })
  const skipped: unknown[] = []
  const { samples } = parseExposition(await exposition([closing.registry, ok.registry], (err) => skipped.push(err)))
  expect(samples.some((s) => s.labels.account === 'ok')).toBe(true)
  expect(samples.some((s) => s.labels.account === 'closing')).toBe(false)
  expect(skipped.map((e) => (e as Error).message)).toEqual(['The database connection is not open'])
})

test('the exposition lets the event loop turn between two accounts, so acks do not wait behind a whole scrape', async () => {
  const accounts = ['a', 'b'].map((id) => new DaemonMetrics({ account: id, governor }))
  let turned = false
  const done = exposition(accounts.map((m) => m.registry)).then(() => turned)
  setImmediate(() => (turned = true))
  expect(await done).toBe(true)
})

test.each([
  [
    { created: 1, updated: 2, deleted: 0, errors: 0, extra: 'x' },
    { created: 1, updated: 2, deleted: 0, errors: 0 },
  ],
  [
    { message: 'Accounting sync queued', status: 'queued' },
    { message: 'Accounting sync queued', status: 'queued' },
  ],
  [null, {}],
])('trigger details of %j', (data, expected) => {
  expect(triggerDetails(data)).toEqual(expected)
})

test('trigger lines', () => {
  const base = { kind: 'sweep' as const, rows: 0, requests: 1, durationMs: 1, notConnected: false }
  expect(
    formatTrigger({ ...base, stream: 'calendar-a', outcome: 'success', details: { created: 1, updated: 2, deleted: 3, errors: 0 } }),
  ).toBe('calendar-a: created 1, updated 2, deleted 3, errors 0\n')
  expect(formatTrigger({ ...base, stream: 'accounting', outcome: 'success', details: { status: 'queued' } })).toBe('accounting: queued\n')
  expect(formatTrigger({ ...base, stream: 'calendar-b', outcome: 'error', error: 'not connected' })).toBe(
    'calendar-b: failed: not connected\n',
  )
})

test('the mirror probe: ready when migrated and writable, not once closed', async () => {
  const mirror = await tempMirror()
  const probe = await probeMirror(mirror.sqlite, 1 << 20)
  expect(probe.ok).toBe(true)
  await mirror.dispose()
  expect(await probeMirror(mirror.sqlite, 1 << 20)).toEqual({ ok: false, reason: 'the mirror is closed' })
})
