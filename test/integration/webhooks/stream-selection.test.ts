// The config's `streams` holds for webhooks too: the daemon (in this process, against the emulator)
// acknowledges deliveries of unselected streams with 200, keeps them in the inbox marked skipped,
// leaves their tables untouched and spends no follow-up GET on them; the failed-delivery check
// sweeps only selected streams.
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { createLogger } from '../../../src/log/logger.js'
import { statusReport } from '../../../src/store/read-models/status-report.js'
import { registerEndpoint } from '../../../src/webhooks/registration.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { STATUS_STREAMS } from '../../../src/cli/status-streams.js'

describe('stream selection holds for webhooks and delivery-gap sweeps', () => {
  test('deliveries of unselected streams get 200, are kept marked skipped, and the gap check sweeps only selected streams', async () => {
    const emu = await emulatorEnv({
      allowHttpWebhooks: true,
      counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 },
    })
    const config = inProcessDaemonConfig(emu, { streams: ['clients'] })
    const daemon = await startDaemon(config, {
      logger: createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
    })
    const rows = (sql: string) => daemon.app.mirror.sqlite.prepare(sql).all() as Record<string, unknown>[]
    const settle = async () => {
      await emu.control('POST', '/deliveries/flush')
      await daemon.webhooks.processor.drained()
    }
    try {
      expect(await daemon.scheduler.runNow('sweep')).toBe(true)
      expect(rows('SELECT count(*) AS n FROM clients')).toEqual([{ n: 3 }])
      const reg = await registerEndpoint(daemon.app.client, daemon.webhooks.secrets, `${daemon.url}/webhooks`, Date.now)
      const changesBefore = rows(`SELECT count(*) AS n FROM change_log WHERE table_name <> 'clients'`)
      await emu.control('POST', '/requests/clear')

      const [job] = await emu.state('jobs')
      const [client] = await emu.state('clients')
      const next = job.jobStatus === 'completed' ? 'scheduled' : 'completed'
      expect((await emu.api('PUT', `/api/v1/jobs/${job.id}`, { notes: 'jobs are not selected' })).status).toBe(200)
      expect((await emu.api('PUT', `/api/v1/jobs/${job.id}`, { jobStatus: next })).status).toBe(200)
      expect((await emu.api('PUT', `/api/v1/clients/${client.id}`, { notes: 'clients are selected' })).status).toBe(200)
      await settle()

      // Every delivery was answered 200 (the upstream records success), none refused.
      const deliveries: { event: string; status: string; responseCode?: number }[] = await emu.state('deliveries')
      expect(deliveries.length).toBeGreaterThanOrEqual(4)
      expect(deliveries.filter((d) => d.status !== 'success' || d.responseCode !== 200)).toEqual([])
      // Stored, settled, and marked skipped with the reason; the selected stream's one applied.
      const inbox = rows(`SELECT event, processed_at IS NOT NULL AS settled, error, skipped FROM webhook_inbox ORDER BY seq`)
      const jobRows = inbox.filter((r) => String(r.event).startsWith('job.'))
      expect(jobRows.map((r) => r.event)).toEqual(expect.arrayContaining(['job.updated', 'job.status_changed']))
      for (const r of jobRows)
        expect(r).toMatchObject({ settled: 1, error: null, skipped: expect.stringContaining('stream jobs is not selected') })
      expect(inbox.filter((r) => r.event === 'client.updated')).toEqual([
        { event: 'client.updated', settled: 1, error: null, skipped: null },
      ])
      expect(rows(`SELECT json_extract(raw, '$.notes') AS notes FROM clients WHERE id = '${client.id}'`)).toEqual([
        { notes: 'clients are selected' },
      ])
      // The unselected table stays untouched, and no follow-up GET was spent on the status change.
      expect(rows('SELECT count(*) AS n FROM jobs')).toEqual([{ n: 0 }])
      expect(rows(`SELECT count(*) AS n FROM change_log WHERE table_name <> 'clients'`)).toEqual(changesBefore)
      expect(await emu.control('GET', '/requests?path=/api/v1/jobs&method=GET')).toEqual([])
      expect(daemon.webhooks.metrics.processor.skipped).toBe(jobRows.length)
      expect(statusReport(daemon.app.mirror.sqlite, Date.now(), STATUS_STREAMS).webhookInbox).toMatchObject({
        backlog: 0,
        failed: 0,
        skipped: jobRows.length,
      })

      // Deliveries now fail (the endpoint points at a closed port): the gap check finds both
      // streams' failures, and sweeps clients only.
      await registerEndpoint(daemon.app.client, daemon.webhooks.secrets, 'http://127.0.0.1:9/webhooks', Date.now)
      expect((await emu.api('PUT', `/api/v1/jobs/${job.id}`, { notes: 'lost: jobs' })).status).toBe(200)
      expect((await emu.api('PUT', `/api/v1/clients/${client.id}`, { notes: 'lost: clients' })).status).toBe(200)
      await settle()
      const failed: { status: string }[] = await emu.state('deliveries')
      expect(failed.filter((d) => d.status === 'retrying').length).toBeGreaterThanOrEqual(2)
      await emu.control('POST', '/requests/clear')
      expect(await daemon.scheduler.runNow('deliveries')).toBe(true)
      const requests: { path: string }[] = await emu.control('GET', '/requests')
      expect(requests.filter((r) => r.path.startsWith(`/api/v1/webhooks/${reg.endpointId}/deliveries`)).length).toBeGreaterThan(0)
      expect(requests.filter((r) => r.path.startsWith('/api/v1/clients')).length).toBeGreaterThan(0)
      expect(requests.filter((r) => !r.path.startsWith('/api/v1/clients') && !r.path.startsWith('/api/v1/webhooks/'))).toEqual([])
      expect(rows(`SELECT json_extract(raw, '$.notes') AS notes FROM clients WHERE id = '${client.id}'`)).toEqual([
        { notes: 'lost: clients' },
      ])
      expect(rows('SELECT count(*) AS n FROM jobs')).toEqual([{ n: 0 }])
    } finally {
      await daemon.stop()
      await emu.close()
    }
  })
})
