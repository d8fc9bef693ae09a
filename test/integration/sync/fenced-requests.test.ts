// A replica that loses an account's lease mid-sweep sends nothing more for it: the governor's permit
// (docs/sharding.md, Wiring) says no before the next start, the request never leaves, and the runs
// end as interrupted (resumed by the new owner from the checkpoint), not as failed.
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { ApiClient } from '../../../src/api/api-client.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { runSweeps } from '../../../src/sync/sync-engine.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { syncEnv } from '../../support/sync-env.js'

describe('upstream requests fenced by the lease', () => {
  test('the permit turns false mid-sweep: no further request reaches the emulator, the runs end interrupted', async () => {
    const emu = await emulatorEnv({ seed: 5, counts: { clients: 300, jobs: 300, invoices: 300 } })
    const env = await syncEnv(emu)
    let owned = true
    let answers = 0
    const governor = new RequestGovernor({ limitPerMinute: 100_000, maxInFlight: 1, permit: () => owned })
    const logger = createLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
    const client = new ApiClient({
      baseUrl: emu.url,
      apiKey: emu.apiKey,
      governor,
      logger,
      // The lease passes to another replica once the third answer is in: the sweep is mid-way.
      onResponse: () => {
        if (++answers === 3) owned = false
      },
    })
    try {
      await emu.control('POST', '/requests/clear')
      const results = await runSweeps(
        { ...env.app.syncContext(), upstream: client },
        { records: [...RECORD_STREAMS], reference: [], metadata: [], objects: undefined, notBuilt: [] },
      )
      const seen = (await emu.control('GET', '/requests?path=/api/v1/')) as unknown[]
      expect(seen).toHaveLength(3)
      expect(results.length).toBeGreaterThan(0)
      expect(results.map((r) => r.outcome)).not.toContain('error')
      expect(results.at(-1)).toMatchObject({ outcome: 'interrupted', errorCode: 'FENCED' })
      // The sweep stopped at the first refusal: the streams after it were not started.
      expect(results.length).toBeLessThan(RECORD_STREAMS.length)
      const stored = env.rows(`SELECT outcome FROM sync_runs ORDER BY id`).map((r) => r.outcome)
      expect(stored).not.toContain('error')
      expect(stored.at(-1)).toBe('interrupted')
      expect(env.rows(`SELECT count(*) AS n FROM sync_state WHERE last_error IS NOT NULL`)[0]?.n).toBe(0)
    } finally {
      await client.close()
    }
  })
})
