// The daemon with a Postgres destination, end to end against the emulator: backfill, then churn
// through the API (webhooks) and the web app (sweeps), with the warehouse stopped and started again
// mid-stream (its own server, so that no other test sees it go). The mirror never waits: intake and
// sweeps go on while the warehouse is down, /readyz stays ready, and the destination catches up to
// an exact replica.
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { request } from 'undici'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { destinationTables } from '../../../src/destination/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { registerEndpoint } from '../../../src/webhooks/registration.js'
import { comparePostgres } from '../../support/compare-postgres.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { inProcessDaemonConfig } from '../../support/in-process-daemon.js'
import { createDatabase, startPostgres, type PostgresServer } from '../../support/postgres-server.js'

let server: PostgresServer

beforeAll(async () => {
  server = await startPostgres()
})

afterAll(async () => {
  await server.stop()
})

const silent = () => createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })

describe('the daemon replicates to Postgres', () => {
  test('backfill, churn with webhooks, the warehouse down and back: intake goes on and the replica ends exact', async () => {
    const emu = await emulatorEnv({
      allowHttpWebhooks: true,
      counts: { clients: 40, jobs: 60, visitsPerJob: 1, invoices: 30, customRecords: 20 },
    })
    const url = await createDatabase(server.url)
    const config = inProcessDaemonConfig(emu, { destination: { postgres: { url, schema: 'fsm' } } })
    const daemon = await startDaemon(config, { logger: silent() })
    const sqlite = daemon.app.mirror.sqlite
    const destination = daemon.destination!
    const changes = () => sqlite.prepare(`SELECT count(*) FROM change_log`).pluck().get() as number
    const settle = async () => {
      await emu.control('POST', '/deliveries/flush')
      await daemon.webhooks.processor.drained()
    }
    try {
      expect(await daemon.scheduler.runNow('sweep')).toBe(true)
      expect(await daemon.scheduler.runNow('reference')).toBe(true)
      await registerEndpoint(daemon.app.client, daemon.webhooks.secrets, `${daemon.url}/webhooks`, Date.now)
      await expect.poll(() => destination.status().lagChanges, { timeout: 20_000, interval: 50 }).toBe(0)

      await emu.control('POST', '/churn', { ratePerSecond: 60 })
      await expect.poll(changes, { timeout: 10_000, interval: 50 }).toBeGreaterThan(changes() + 20)
      await settle()

      // The warehouse goes away: sweeps and webhook acks go on, readiness is about the mirror alone.
      await server.pause()
      const before = changes()
      await expect.poll(() => destination.status().state, { timeout: 10_000, interval: 50 }).toBe('error')
      expect(await daemon.scheduler.runNow('sweep')).toBe(true)
      await settle()
      expect(changes()).toBeGreaterThan(before)
      expect(destination.status().lagChanges).toBeGreaterThan(0)
      await expect
        .poll(() => destination.status().lastError, { timeout: 10_000, interval: 50 })
        .toMatch(/cannot connect to Postgres at 127\.0\.0\.1:\d+\/fsm_test\w* \(connection refused\)/)
      const ready = await request(`${daemon.url}/readyz`)
      expect(ready.statusCode).toBe(200)
      await ready.body.dump()
      const metrics = await (await request(`${daemon.url}/metrics`)).body.text()
      expect(metrics).toMatch(/fsm_destination_lag_changes\{destination="postgres",account="default"\} [1-9]/)
      expect(metrics).toMatch(/fsm_destination_errors_total\{destination="postgres",account="default"\} [1-9]/)

      await server.start()
      await emu.control('POST', '/churn', { ratePerSecond: 0 })
      expect(await daemon.scheduler.runNow('sweep')).toBe(true)
      await settle()
      await expect.poll(() => destination.status().lagChanges, { timeout: 30_000, interval: 50 }).toBe(0)
      // Tables compared by content follow within one check interval.
      await destination.catchUp()
      expect(await comparePostgres(sqlite, url, 'fsm', destinationTables())).toEqual([])
      expect(destination.status()).toMatchObject({ state: 'following', lastError: null })
    } finally {
      await daemon.stop()
      await emu.close()
    }
  })
})
