// A rejected API key in the daemon: every stream would get the same 401, so the continuous sweeps
// back off together (one request per back-off step) instead of each stream spending its own request
// at every step of its own back-off. Fake time, requests counted in the emulator's log.
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { selectStreams } from '../../../connectors/selection.js'
import { createApp } from '../../../src/daemon/create-app.js'
import { SweepLoop } from '../../../src/daemon/sweep-loop.js'
import { SerialQueue } from '../../../src/daemon/sync-jobs.js'
import { createLogger } from '../../../src/log/logger.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { FakeClock } from '../../support/fake-clock.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'

const silent = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

test('a rejected key: the continuous sweeps wait together, about one request a minute (fake time)', async () => {
  const emu = await emulatorEnv({ counts: { clients: 4, jobs: 4, visitsPerJob: 1, invoices: 2, customRecords: 0 } })
  const clock = new FakeClock(Date.now())
  const config = { ...inProcessDaemonConfig(emu), apiKey: 'svc_live_0000000000000000000000000000000000000000000000' }
  const app = await createApp(config, { logger: silent(), clock })
  const loop = new SweepLoop({
    context: (signal) => app.syncContext({ signal }),
    client: app.client,
    governor: app.governor,
    clock,
    selection: selectStreams(['clients', 'jobs', 'visits', 'invoices']),
    budgetShare: 0.5,
    maxIntervalMs: 60_000,
    serialQueue: new SerialQueue(),
    logger: app.logger,
  })
  try {
    loop.start()
    const end = clock.now() + 10 * 60_000
    while (clock.now() < end) {
      // Let the request in flight answer and the loop come to wait on the clock, then move time on.
      for (let i = 0; !(app.governor.state().inFlight === 0 && clock.pending > 0); i++) {
        if (i > 5_000) throw new Error('the sweeps never came to wait on the clock')
        await new Promise((r) => setTimeout(r, 2))
      }
      await clock.advance(1_000)
    }
    const requests = (await emu.control('GET', '/requests')) as { status: number }[]
    expect(requests.every((r) => r.status === 401)).toBe(true)
    // Back-off steps of 5, 10, 20 and 40 s, then the bound (60 s): 13 requests in ten minutes for
    // the four streams together (each on its own would spend about that many).
    expect(requests.length).toBeGreaterThanOrEqual(10)
    expect(requests.length).toBeLessThanOrEqual(15)
  } finally {
    await loop.stop()
    await app.close()
    await emu.close()
  }
}, 120_000)
