// Faults, kills and reconciliation against the emulator (docs/guarantees.md, The mirror is exact).
import { describe, expect, test } from 'vitest'
import { invoices, RECORD_STREAMS } from '../../../connectors/index.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli, spawnCli } from '../../support/run-cli.js'
import { compareWithEmulator, syncEnv } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import path from 'node:path'

describe('sync under upstream faults', () => {
  test('injected 5xx and connection resets: the run completes and is exact', async () => {
    const emu = await emulatorEnv({ seed: 13, counts: { clients: 600, jobs: 600, invoices: 600 } })
    const env = await syncEnv(emu)
    await emu.control('POST', '/faults', { route: 'GET /api/v1/*', status5xxShare: 0.1, resetShare: 0.05 })
    const results = await env.sync()
    expect(results.map((r) => r.outcome)).toEqual(['success', 'success', 'success', 'success'])
    await emu.control('POST', '/faults', { clear: true })
    expect(await compareWithEmulator(emu, env)).toEqual([])
    const entries: { status: number }[] = await emu.control('GET', '/requests')
    expect(entries.some((e) => e.status >= 500 || e.status === 0)).toBe(true)
  }, 120_000)

  test('a forced 429 with Retry-After: the governor waits as told, then the run completes', async () => {
    const emu = await emulatorEnv({ seed: 13, counts: { clients: 20, jobs: 5, invoices: 50 }, rateLimit: 100_000 })
    const env = await syncEnv(emu)
    await emu.control('POST', '/faults', { route: 'GET /api/v1/invoices', force429: { count: 1, retryAfterSeconds: 2 } })
    const [run] = await env.sync({ streams: [invoices] })
    expect(run!.outcome).toBe('success')
    expect(run!.requests).toBe(2)
    const entries: { status: number; time: string }[] = await emu.control('GET', '/requests?path=/api/v1/invoices')
    expect(entries.map((e) => e.status)).toEqual([429, 200])
    expect(Date.parse(entries[1]!.time) - Date.parse(entries[0]!.time)).toBeGreaterThanOrEqual(1900)
    expect(await compareWithEmulator(emu, env, [invoices])).toEqual([])
  })

  test('a 4xx is not retried and the run reports the route, status and code', async () => {
    const emu = await emulatorEnv({ seed: 1, counts: { clients: 20, jobs: 5, invoices: 5 } })
    const env = await syncEnv(emu, { FSM_API_KEY: 'svc_live_not_a_real_key_000000000000' })
    const [run] = await env.sync({ streams: [invoices] })
    expect(run!.outcome).toBe('error')
    expect(run!.requests).toBe(1)
    expect(run!.error).toMatch(/401/)
    expect(run!.error).toMatch(/GET \/api\/v1\/invoices/)
    expect(run!.error).not.toContain('svc_live_not_a_real_key')
    expect(env.rows(`SELECT last_error FROM sync_state WHERE stream = 'invoices'`)[0]!.last_error).toMatch(/401/)
  })
})

describe('sync killed mid-backfill', () => {
  test('SIGKILL, then run again: exact, and it did not start over', async () => {
    const emu = await emulatorEnv({ seed: 17, counts: { clients: 3000, jobs: 10, invoices: 10 } })
    const dir = tempDir()
    const db = path.join(dir, 'mirror.db')
    // 600 requests/min: a page every 100 ms, so the 30-page backfill takes ~3 s and the kill lands in it.
    const vars = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db, FSM_RATE_LIMIT: '600' })
    const child = spawnCli(['sync', '--stream', 'clients'], vars)
    // Kill once the mirror holds a few pages.
    const { default: Database } = await import('better-sqlite3')
    for (;;) {
      await new Promise((r) => setTimeout(r, 100))
      try {
        const probe = new Database(db, { readonly: true, fileMustExist: true })
        const n = (probe.prepare('SELECT count(*) AS n FROM clients').get() as { n: number }).n
        probe.close()
        if (n >= 500) break
      } catch {
        // not created yet
      }
    }
    child.kill('SIGKILL')
    await new Promise((r) => child.once('close', r))
    const second = await runCli(['sync', '--stream', 'clients'], { ...vars, FSM_RATE_LIMIT: '100000' })
    expect(second.code, second.stderr).toBe(0)
    const env = await syncEnv(emu, {}, dir)
    const runs = env.rows(`SELECT outcome, rows, requests FROM sync_runs WHERE stream = 'clients' ORDER BY id`)
    expect(runs[0]!.outcome).toBe('interrupted')
    expect(runs[1]!.outcome).toBe('success')
    // Went on from the checkpoint: the second run read only what was left.
    expect(runs[1]!.requests as number).toBeLessThan(28)
    expect(
      await compareWithEmulator(
        emu,
        env,
        RECORD_STREAMS.filter((s) => s.name === 'clients'),
      ),
    ).toEqual([])
  })
})

describe('reconcile', () => {
  test('marks exactly the records deleted upstream, including ones deleted in the web app', async () => {
    const emu = await emulatorEnv({ seed: 19, counts: { clients: 400, jobs: 400, invoices: 400 } })
    const env = await syncEnv(emu)
    await env.sync()
    const live = (await emu.state('invoices')).filter((i) => !i.deleted).map((i) => i.id as string)
    const viaApi = live.slice(0, 10)
    for (const id of viaApi) expect((await emu.api('DELETE', `/api/v1/invoices/${id}`)).status).toBe(200)
    const jobIds = (await emu.state('jobs'))
      .filter((j) => !j.deleted)
      .map((j) => j.id as string)
      .slice(5, 12)
    for (const id of jobIds) await emu.control('POST', '/mutate', { resource: 'jobs', op: 'delete', id })
    const results = await env.reconcile()
    expect(results.every((r) => r.outcome === 'success')).toBe(true)
    const marked = env.rows(`SELECT id FROM invoices WHERE deleted_at IS NOT NULL ORDER BY id`).map((r) => r.id)
    expect(marked).toEqual([...viaApi].sort())
    expect(env.rows(`SELECT id FROM jobs WHERE deleted_at IS NOT NULL ORDER BY id`).map((r) => r.id)).toEqual([...jobIds].sort())
    expect(await compareWithEmulator(emu, env)).toEqual([])
    expect(env.rows(`SELECT count(*) AS n FROM change_log WHERE op = 'delete'`)[0]!.n).toBe(viaApi.length + jobIds.length)
  })

  test('the guard refuses to mark more than 10 % of a table, and says so', async () => {
    const emu = await emulatorEnv({ seed: 23, counts: { clients: 200, jobs: 10, invoices: 10 } })
    const env = await syncEnv(emu)
    await env.sync()
    const live = (await emu.state('clients')).filter((c) => !c.deleted).map((c) => c.id as string)
    for (const id of live.slice(0, 40)) expect((await emu.api('DELETE', `/api/v1/clients/${id}`)).status).toBe(200)
    const [run] = await env.reconcile(RECORD_STREAMS.filter((s) => s.name === 'clients'))
    expect(run!.outcome).toBe('guarded')
    expect(run!.error).toMatch(/refused/)
    expect(env.rows(`SELECT count(*) AS n FROM clients WHERE deleted_at IS NOT NULL`)[0]!.n).toBe(0)
    expect(env.rows(`SELECT outcome FROM sync_runs WHERE kind = 'reconcile'`)[0]!.outcome).toBe('guarded')
  })
})

describe('the request budget across processes', () => {
  // Regression (soak, 2026-11-23): a daemon restarted after SIGKILL began with an empty window and
  // started 61 requests in one 60 s window against a budget of 60.
  test('a runtime opened on the same mirror within the minute counts what the previous one started', async () => {
    const emu = await emulatorEnv({ seed: 3, counts: { clients: 30, jobs: 5, invoices: 5 } })
    const dir = tempDir()
    const first = await syncEnv(emu, {}, dir)
    await first.sync()
    const spent = first.app.governor.state().sentLastMinute
    expect(spent).toBeGreaterThanOrEqual(4)
    await first.close()
    const second = await syncEnv(emu, {}, dir)
    expect(second.app.governor.state().sentLastMinute).toBe(spent)
    const upstream: unknown[] = await emu.control('GET', '/requests')
    expect(upstream).toHaveLength(spent)
  })
})
