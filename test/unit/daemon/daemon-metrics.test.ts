// The metrics text: request counters from the client hook, run observations, scrape-time gauges.
import { expect, test } from 'vitest'
import { packageInfo } from '../../../src/config/package-info.js'
import { DaemonMetrics } from '../../../src/daemon/daemon-metrics.js'
import { exposition, ProcessMetrics } from '../../../src/daemon/process-metrics.js'
import { registerDestinationMetrics } from '../../../src/daemon/destination-metrics.js'
import type { DestinationStatus } from '../../../src/destination/index.js'
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

test('the exposition lets the event loop turn every few thousand series, not after each account', async () => {
  // 300 accounts of some 40 series each (about 1.3 MB of text).
  const accounts = Array.from({ length: 300 }, (_, i) => {
    const m = new DaemonMetrics({ account: `acct-${i}`, governor })
    for (const stream of ['clients', 'jobs'])
      m.observeRun({ stream, kind: 'sweep', outcome: 'success', rows: 1, requests: 1, durationMs: 200 })
    return m
  })
  let turns = 0
  let rendering = true
  const count = () => {
    if (!rendering) return
    turns++
    setImmediate(count)
  }
  setImmediate(count)
  await exposition(accounts.map((m) => m.registry))
  rendering = false
  expect(turns).toBeGreaterThanOrEqual(2)
  expect(turns).toBeLessThan(30)
})

test("summary: an account keeps a few series and adds the per-stream and per-route families to the process, whose counters keep a removed account's counts", async () => {
  const proc = new ProcessMetrics('summary', () => [
    ['north', true],
    ['south', false],
  ])
  const shared = proc.shared!
  let stored = 4
  const account = (id: string, checkpointPasses: number) =>
    new DaemonMetrics({
      account: id,
      governor,
      perAccount: 'summary',
      shared,
      webhookCounters: () => ({ webhook_intake_stored_total: stored, webhook_intake_too_large_total: 2 }),
      checkpoints: () => ({ passes: checkpointPasses, busy: 0, errors: 0, logFrames: 10, copiedFrames: 0, micros: 0 }),
      freshness: () => [
        { stream: 'jobs', lastSweptAt: 1_800_000_000_000, lastReconciledAt: null, stalenessSeconds: 3.14 },
        { stream: 'clients', lastSweptAt: 1_700_000_000_000, lastReconciledAt: null, stalenessSeconds: 12.26 },
        { stream: 'taxes', lastSweptAt: null, lastReconciledAt: null, stalenessSeconds: null },
        // Reference data, read hourly: not in the account's staleness nor its last sweep.
        { stream: 'company', lastSweptAt: 1_600_000_000_000, lastReconciledAt: null, stalenessSeconds: 1800 },
      ],
      swept: (stream) => stream !== 'company',
    })
  const [north, south] = [account('north', 5), account('south', 7)]
  // Not summed before it runs (an account whose open fails never is).
  expect(await exposition([proc.registry])).toContain('fsm_mirror_checkpoint_passes_total 0')
  for (const m of [north, south]) m.attach()
  north.onResponse({ route: 'GET /api/v1/jobs', status: 200, attempt: 1, durationMs: 5 })
  south.onResponse({ route: 'GET /api/v1/jobs', status: 200, attempt: 1, durationMs: 5 })
  north.observeRun({ stream: 'jobs', kind: 'sweep', outcome: 'success', rows: 1, requests: 1, durationMs: 200 })
  north.observeRun({ stream: 'clients', kind: 'sweep', outcome: 'error', rows: 0, requests: 1, durationMs: 200 })
  south.observeRun({ stream: 'jobs', kind: 'sweep', outcome: 'success', rows: 2, requests: 1, durationMs: 200 })
  const text = await exposition([proc.registry, north.registry, south.registry])
  const { samples } = parseExposition(text)
  expect(text).toContain('fsm_api_requests_total{route="GET /api/v1/jobs",status="200"} 2')
  expect(text).toContain('fsm_rows_written_total{stream="jobs",kind="sweep"} 3')
  expect(text).toContain('fsm_run_duration_seconds_count{stream="jobs",kind="sweep"} 2')
  expect(text).toContain('fsm_webhook_intake_too_large_total 4')
  expect(text).toContain('fsm_mirror_checkpoint_passes_total 12')
  expect(text).toContain('fsm_mirror_wal_frames 20')
  expect(text).toContain('fsm_account_up{account="north"} 1\nfsm_account_up{account="south"} 0')
  expect(text).toContain('fsm_account_staleness_seconds{account="north"} 12.3')
  expect(text).toContain('fsm_account_last_sweep_timestamp_seconds{account="north"} 1700000000')
  expect(text).toContain('fsm_account_runs_total{outcome="success",account="north"} 1')
  expect(text).toContain('fsm_account_runs_total{outcome="error",account="north"} 1')
  expect(text).toContain('fsm_account_streams_failing{account="north"} 1')
  expect(text).toContain('fsm_account_streams_failing{account="south"} 0')
  expect(text).toContain('fsm_webhook_intake_stored_total{account="north"} 4')
  expect(samples.filter((s) => s.labels.account === 'north').map((s) => s.name)).not.toContain('fsm_stream_staleness_seconds')
  // Up, staleness, last sweep, two outcomes, failing, 5 budget gauges, the one webhook counter kept.
  expect(samples.filter((s) => s.labels.account === 'north')).toHaveLength(12)
  // South leaves: its counts stay in the process's counters, its gauge leaves the sum.
  south.retire()
  stored = 0
  const after = await exposition([proc.registry, north.registry])
  expect(after).toContain('fsm_mirror_checkpoint_passes_total 12')
  expect(after).toContain('fsm_webhook_intake_too_large_total 4')
  expect(after).toContain('fsm_mirror_wal_frames 10')
  expect(after).toContain('fsm_run_duration_seconds_count{stream="jobs",kind="sweep"} 2')
})

test("summary: the destination's lag stays the account's, its counters are summed; its status (a read of the mirror) is read once per registry a scrape, not once per series", async () => {
  const proc = new ProcessMetrics('summary')
  const reads = { n: 0 }
  const status = (errors: number) => (): DestinationStatus => {
    reads.n++
    return {
      state: 'following',
      cursor: 5,
      lagChanges: 2,
      lagSeconds: 1.5,
      lastError: null,
      lastErrorAt: null,
      rowsReplicated: 10,
      changesApplied: 4,
      errors,
      loads: 1,
      timesNulled: 0,
    }
  }
  for (const [id, errors] of [
    ['north', 1],
    ['south', 2],
  ] as const) {
    const m = new DaemonMetrics({ account: id, governor, perAccount: 'summary', shared: proc.shared! })
    registerDestinationMetrics(m.registry, status(errors), { families: proc.shared!.summed, owner: m })
    m.attach()
    if (id === 'north') continue
    const text = await exposition([proc.registry, m.registry])
    expect(text).toContain('fsm_destination_lag_seconds{destination="postgres",account="south"} 1.5')
    expect(text).toContain('fsm_destination_up{destination="postgres",account="south"} 1')
    expect(text).toContain('fsm_destination_errors_total{destination="postgres"} 3')
    expect(text).toContain('fsm_destination_rows_replicated_total{destination="postgres"} 20')
    expect(text).not.toContain('fsm_destination_errors_total{destination="postgres",account=')
  }
  reads.n = 0
  await exposition([proc.registry])
  // The process's five sums read each account's status once.
  expect(reads.n).toBe(2)
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
