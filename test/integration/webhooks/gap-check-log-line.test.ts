// The failed-delivery check logs "sweeping the affected selected streams now" only when it sweeps
// something: when every missed delivery belongs to a stream the config does not select, it says
// that nothing is swept and which streams were passed over.
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { createLogger } from '../../../src/log/logger.js'
import { registerEndpoint } from '../../../src/webhooks/registration.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'

test('missed deliveries of unselected streams only do not log a sweep: the line says nothing is swept and names the streams passed over', async () => {
  const emu = await emulatorEnv({
    allowHttpWebhooks: true,
    counts: { clients: 1, jobs: 1, visitsPerJob: 0, invoices: 0, customRecords: 0 },
  })
  const config = inProcessDaemonConfig(emu, { streams: ['clients'] })
  const lines: { msg: string; streams?: string[]; notSelected?: string[]; deliveries?: number }[] = []
  const destination = new Writable({
    write: (c: Buffer, _e, cb) => (
      lines.push(
        ...c
          .toString('utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as (typeof lines)[number]),
      ),
      cb()
    ),
  })
  const daemon = await startDaemon(config, { logger: createLogger({ level: 'info', destination }) })
  try {
    // Deliveries fail: the endpoint points at a closed port. Only a job (not selected) changes.
    await registerEndpoint(daemon.app.client, daemon.webhooks.secrets, 'http://127.0.0.1:9/webhooks', Date.now)
    const [job] = await emu.state('jobs')
    expect((await emu.api('PUT', `/api/v1/jobs/${job.id}`, { notes: 'lost: jobs' })).status).toBe(200)
    await emu.control('POST', '/deliveries/flush')
    expect(await daemon.scheduler.runNow('deliveries')).toBe(true)
    const gapLines = lines.filter((l) => l.msg.startsWith('webhook deliveries failed upstream'))
    expect(gapLines).toEqual([expect.objectContaining({ msg: expect.stringContaining('nothing to sweep'), notSelected: ['jobs'] })])
    expect(gapLines[0]!.deliveries).toBeGreaterThan(0)
    expect(lines.some((l) => l.msg.includes('sweeping the affected selected streams'))).toBe(false)
  } finally {
    await daemon.stop()
    await emu.close()
  }
})
