// The time a page was observed is when its request started, not when the caller queued it: at
// reconcile priority a GET can wait minutes for its slot, and reconcile stores what it returns
// with that time as observedAt (newer-wins), so a queueing time would date the answer too early.
import { describe, expect, test } from 'vitest'
import { ApiClient } from '../../../src/api/api-client.js'
import { FakeClock } from '../../support/fake-clock.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { CountingSource } from '../../../src/sync/counting-source.js'
import { emulatorEnv } from '../../support/emulator-env.js'

describe('the last request start of a run is when the request started, not when it was queued', () => {
  test('a GET that waited a minute for its slot is dated when the governor let it start', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 3, jobs: 1, invoices: 1 } })
    const clock = new FakeClock()
    // One start a minute, no burst: the second GET waits for the window.
    const governor = new RequestGovernor({ limitPerMinute: 1, burst: 1, clock })
    const client = new ApiClient({ baseUrl: emu.url, apiKey: emu.apiKey, governor, clock, logger: createLogger({ level: 'silent' }) })
    try {
      const source = new CountingSource(client, () => clock.now())
      await source.get('/api/v1/clients', { limit: '1' }, { priority: 'reconcile' })
      const queuedAt = clock.now()
      expect(source.lastStartedAt).toBe(queuedAt)
      const second = source.get('/api/v1/clients', { limit: '1' }, { priority: 'reconcile' })
      await clock.advance(61_000)
      await second
      expect(source.requests).toBe(2)
      // Granted once the first start left the window (60 s plus the governor's margin).
      expect(source.lastStartedAt).toBeGreaterThanOrEqual(queuedAt + 60_000)
      expect(source.lastStartedAt).toBeLessThanOrEqual(clock.now())
    } finally {
      await client.close()
    }
  })
})
