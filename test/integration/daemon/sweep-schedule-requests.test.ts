// The daemon's `sweep` schedule pays for record streams and custom objects only: reference data,
// webhook endpoints and API keys are the `reference` schedule's (hourly by default), failed
// deliveries the `deliveries` schedule's (docs/sweeping.md, What a sweep costs).
import { expect, test } from 'vitest'
import { selectStreams } from '../../../connectors/selection.js'
import { DaemonMetrics } from '../../../src/daemon/daemon-metrics.js'
import { syncJobs } from '../../../src/daemon/sync-jobs.js'
import { DeliveryGapCheck } from '../../../src/webhooks/delivery-gaps.js'
import { SecretStore } from '../../../src/webhooks/secret-store.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { syncEnv } from '../../support/sync-env.js'

test('with every stream selected, the sweep schedule reads record lists and custom objects, nothing else', async () => {
  const emu = await emulatorEnv({ seed: 101, counts: { clients: 30, jobs: 20, invoices: 20, customRecords: 20 } })
  // A timed sweep (the cron form of `schedules.sweep`); the continuous loop sweeps the same record
  // streams and custom objects, never reference data.
  const env = await syncEnv(emu, { FSM_SCHEDULE_SWEEP: '*/5 * * * *' })
  const gaps = new DeliveryGapCheck({
    client: env.app.client,
    sqlite: env.app.mirror.sqlite,
    secrets: SecretStore.forMirror(env.db),
    graceHours: 24,
    logger: env.app.logger,
  })
  const jobs = syncJobs({ app: env.app, metrics: new DaemonMetrics({ governor: () => env.app.governor.state() }), gaps })
  const run = async (name: string) => {
    await emu.control('POST', '/requests/clear')
    await jobs.find((j) => j.name === name)!.run(new AbortController().signal)
    return [...new Set(((await emu.control('GET', '/requests')) as { path: string }[]).map((r) => r.path))].sort()
  }
  // No `streams` setting: every stream is selected, reference data and account metadata included.
  const selected = selectStreams(env.app.config.streams)
  expect(selected.reference.map((s) => s.name)).toContain('items')
  expect(selected.metadata.map((s) => s.name)).toEqual(expect.arrayContaining(['webhooks', 'api_keys']))
  expect(selected.objects).toBe('all')
  const swept = await run('sweep')
  const allowed = (p: string) =>
    ['/api/v1/clients', '/api/v1/jobs', '/api/v1/visits', '/api/v1/invoices'].includes(p) || p.startsWith('/api/v1/objects')
  expect(swept.filter((p) => !allowed(p))).toEqual([])
  expect(swept).toContain('/api/v1/clients')
  const reference = await run('reference')
  expect(reference).toEqual(expect.arrayContaining(['/api/v1/webhooks', '/api/v1/api-keys']))
  expect(reference.filter((p) => allowed(p))).toEqual([])
})
