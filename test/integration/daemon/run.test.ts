// `fsm-sync run` end to end in a child process: schedules with churn and webhooks, /readyz,
// /metrics, SIGTERM, and a mirror equal to the emulator afterwards.
import { describe, expect, test } from 'vitest'
import { RECORD_STREAMS } from '../../../connectors/index.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { runCli } from '../../support/run-cli.js'
import { compareWithEmulator, type SyncEnv } from '../../support/sync-env.js'
import { tempDir } from '../../support/temp-mirror.js'
import { parseExposition } from '../../support/prometheus-text.js'
import { daemonEnv, freePort, get, query, startRun, until } from '../../support/daemon-env.js'
import { idleSchedules } from '../../support/schedules.js'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { request } from 'undici'
import { sign } from '../../../src/webhooks/signature.js'
import { SECRET, T, hex, jobPayload } from '../../support/webhook-env.js'

const successesAfter = (db: string, kind: string, mark: number) =>
  new Set(
    query(db, `SELECT stream FROM sync_runs WHERE kind = ? AND outcome = 'success' AND id > ?`, kind, mark).map((r) => r.stream as string),
  )

describe('fsm-sync run', () => {
  test('keeps the mirror equal to a churning account, serves health and metrics, stops cleanly on SIGTERM', async () => {
    const emu = await emulatorEnv({
      allowHttpWebhooks: true,
      counts: { clients: 12, jobs: 12, visitsPerJob: 1, invoices: 6, customRecords: 0 },
    })
    const dir = tempDir()
    const port = await freePort()
    const env = daemonEnv(emu, dir, port, {
      schedules: idleSchedules({ sweep: '*/2 * * * * *', reconcile: '*/3 * * * * *' }),
    })
    const db = env.FSM_DB!
    // The daemon's endpoint receives the account's webhooks (deletions included).
    const reg = await runCli(['webhooks', 'register', '--url', `http://127.0.0.1:${port}/webhooks`], env)
    expect(reg.code, reg.stderr).toBe(0)

    const run = startRun(env)
    const base = `http://127.0.0.1:${port}`
    await until('/readyz 200', async () => (await get(`${base}/readyz`)).status === 200)
    expect((await get(`${base}/healthz`)).status).toBe(200)
    await emu.control('POST', '/churn', { ratePerSecond: 8 })
    await until(
      'two sweeps during churn',
      () =>
        (query(db, `SELECT count(*) AS n FROM sync_runs WHERE kind = 'sweep' AND stream = 'clients' AND outcome = 'success'`)[0]
          ?.n as number) >= 2,
    )
    await emu.control('POST', '/churn', { stop: true })
    await emu.control('POST', '/deliveries/flush')
    const mark = (query(db, 'SELECT max(id) AS id FROM sync_runs')[0]?.id as number | null) ?? 0
    // One sweep and one reconciliation of every stream after the churn stopped.
    await until('a sweep and a reconciliation after the churn', () => {
      const swept = successesAfter(db, 'sweep', mark)
      const reconciled = successesAfter(db, 'reconcile', mark)
      return RECORD_STREAMS.every((s) => swept.has(s.name) && reconciled.has(s.name))
    })

    const metrics = await get(`${base}/metrics`)
    expect(metrics.status).toBe(200)
    // A valid exposition (it throws otherwise), each family once.
    expect(parseExposition(metrics.text).samples.length).toBeGreaterThan(0)
    expect(metrics.text).toMatch(/^fsm_api_requests_total\{route="GET \/api\/v1\/clients",status="200",account="default"\} \d+$/m)
    expect(metrics.text).toMatch(/^fsm_last_success_timestamp_seconds\{stream="clients",account="default"\} \d+/m)
    expect(metrics.text).toMatch(/^fsm_webhook_intake_stored_total\{account="default"\} \d+$/m)
    // Checkpoints run on the worker thread: after a sweep's commits it has passed at least once.
    expect(Number(/^fsm_mirror_checkpoint_passes_total\{account="default"\} (\d+)$/m.exec(metrics.text)?.[1])).toBeGreaterThan(0)
    expect(metrics.text).toMatch(/^fsm_mirror_checkpoint_errors_total\{account="default"\} 0$/m)
    expect(metrics.text).toMatch(/^fsm_run_duration_seconds_bucket\{le="1",account="default",stream="clients",kind="sweep"\} \d+$/m)

    run.child.kill('SIGTERM')
    const exit = await run.exited
    expect(exit, run.output()).toEqual({ code: 0, signal: null })
    expect(run.output()).not.toContain(emu.apiKey)

    const mirror = { rows: (sql: string, ...p: unknown[]) => query(db, sql, ...p) } as unknown as SyncEnv
    expect(await compareWithEmulator(emu, mirror)).toEqual([])
  }, 60_000)

  test('run --stream keeps only the named streams, above FSM_STREAMS; an unknown name is a usage error', async () => {
    const emu = await emulatorEnv({ counts: { clients: 3, jobs: 3, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
    const dir = tempDir()
    const env = daemonEnv(
      emu,
      dir,
      await freePort(),
      { schedules: idleSchedules({ sweep: '*/1 * * * * *' }) },
      { FSM_STREAMS: 'jobs,visits' },
    )
    const db = env.FSM_DB!
    const refused = await runCli(['run', '--stream', 'widgets'], env)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--stream widgets: no such stream; run takes: clients, jobs,')

    const run = startRun(env, ['--stream', 'clients', '--stream', 'invoices'])
    await until('a sweep of clients and of invoices', () => {
      const swept = successesAfter(db, 'sweep', 0)
      return swept.has('clients') && swept.has('invoices')
    })
    run.child.kill('SIGTERM')
    expect(await run.exited, run.output()).toEqual({ code: 0, signal: null })
    expect(query(db, 'SELECT DISTINCT stream FROM sync_runs ORDER BY stream').map((r) => r.stream)).toEqual(['clients', 'invoices'])
    const paths = ((await emu.control('GET', '/requests')) as { path: string }[]).map((r) => r.path)
    expect(paths.filter((p) => p.startsWith('/api/v1/jobs') || p.startsWith('/api/v1/visits'))).toEqual([])
  }, 60_000)

  test('one account without a list keeps no intake journal: its deliveries are stored in its own inbox, nothing in the data folder', async () => {
    const emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 0, invoices: 0, customRecords: 0 } })
    const dir = tempDir()
    const port = await freePort()
    const env = daemonEnv(emu, dir, port, { schedules: idleSchedules() }, { FSM_WEBHOOK_SECRETS: SECRET })
    const db = env.FSM_DB!
    // Run from `dir`: the data folder's default (./data) is there.
    const run = startRun(env, [], dir)
    try {
      await until('/readyz 200', async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
      for (let i = 1; i <= 3; i++) {
        const body = Buffer.from(JSON.stringify(jobPayload(hex(i), T(i))))
        const res = await request(`http://127.0.0.1:${port}/webhooks`, {
          method: 'POST',
          headers: { 'x-service-event': 'job.updated', 'x-service-delivery': `single-${i}`, 'x-service-signature': sign(SECRET, body) },
          body,
        })
        expect(await res.body.json()).toEqual({ received: true })
      }
      expect(query(db, `SELECT delivery_id FROM webhook_inbox ORDER BY seq`).map((r) => r.delivery_id)).toEqual([
        'single-1',
        'single-2',
        'single-3',
      ])
      expect(existsSync(path.join(dir, 'data'))).toBe(false)
    } finally {
      run.child.kill('SIGTERM')
      await run.exited
    }
  }, 60_000)
})
