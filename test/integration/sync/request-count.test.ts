// sync_runs.requests counts every attempt the upstream saw for the run, retries included, whether
// the request finally succeeds or fails (counted where attempts start, not by each caller).
import { describe, expect, test } from 'vitest'
import { clients, invoices } from '../../../connectors/index.js'
import { runTrigger } from '../../../src/sync/integration-triggers.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { syncEnv } from '../../support/sync-env.js'

const logged = async (emu: Awaited<ReturnType<typeof emulatorEnv>>, path: string, method = 'GET') =>
  ((await emu.control('GET', `/requests?path=${path}&method=${method}`)) as unknown[]).length

const storedRequests = (env: Awaited<ReturnType<typeof syncEnv>>, stream: string) =>
  env.rows(`SELECT requests FROM sync_runs WHERE stream = ? ORDER BY id DESC LIMIT 1`, stream)[0]?.requests

describe('a run records every attempt it made', () => {
  test('a sweep whose request fails after its retries records all four attempts, not one', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 5, jobs: 5, invoices: 5 } })
    const env = await syncEnv(emu)
    // Four 429s with Retry-After 0: the first attempt and its three retries, without waiting.
    await emu.control('POST', '/faults', { route: 'GET /api/v1/invoices*', force429: { count: 4, retryAfterSeconds: 0 } })
    const [run] = await env.sync({ streams: [invoices] })
    expect(run!.outcome).toBe('error')
    const seen = await logged(emu, '/api/v1/invoices')
    expect(seen).toBe(4)
    expect(run!.requests).toBe(seen)
    expect(storedRequests(env, 'invoices')).toBe(seen)
  })

  test('a trigger whose POST is refused after its retries records every attempt', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 5, jobs: 5, invoices: 5 } })
    const env = await syncEnv(emu)
    await emu.control('POST', '/faults', {
      route: 'POST /api/v1/integrations/calendar-b/sync',
      force429: { count: 4, retryAfterSeconds: 0 },
    })
    const run = await runTrigger(env.app.syncContext(), env.app.client, 'calendar-b')
    expect(run.outcome).toBe('error')
    const seen = await logged(emu, '/api/v1/integrations/calendar-b/sync', 'POST')
    expect(seen).toBe(4)
    expect(run.requests).toBe(seen)
    expect(storedRequests(env, 'calendar-b')).toBe(seen)
  })

  test('a sweep through injected 5xx records exactly the attempts the upstream saw', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 400, jobs: 5, invoices: 5 } })
    const env = await syncEnv(emu)
    await emu.control('POST', '/faults', { route: 'GET /api/v1/clients*', status5xxShare: 0.3 })
    const [run] = await env.sync({ streams: [clients] })
    await emu.control('POST', '/faults', { clear: true })
    const seen = await logged(emu, '/api/v1/clients')
    expect(seen).toBeGreaterThan(5)
    expect(run!.requests).toBe(seen)
    expect(storedRequests(env, 'clients')).toBe(seen)
  }, 30_000)
})
