// An invalid cron value used to leave the daemon running with no schedules (ready, every `next`
// null, nothing ever synced). Now the real CLI exits 2 naming the key as written, and /readyz is
// not ready while a schedule that is on has no next run.
import path from 'node:path'
import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../../src/config/index.js'
import { startDaemon } from '../../../src/daemon/daemon.js'
import { createLogger } from '../../../src/log/logger.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { NEVER, daemonEnv, freePort, get, startRun, until } from '../../support/daemon-env.js'

/** Runs `fsm-sync run` until it exits; should it come up instead, stops it and says so. */
async function runUntilExit(env: Record<string, string>, port: number): Promise<{ code: number | null; output: string }> {
  const run = startRun(env)
  const outcome = await Promise.race([
    run.exited.then((e) => ({ exited: e })),
    until('the daemon to answer', async () => (await get(`http://127.0.0.1:${port}/healthz`)).status === 200).then(() => ({
      exited: undefined,
    })),
  ])
  if (outcome.exited === undefined) {
    run.child.kill('SIGTERM')
    await run.exited
    return { code: null, output: `the daemon started and kept running:\n${run.output()}` }
  }
  return { code: outcome.exited.code, output: run.output() }
}

describe('an invalid cron value stops the daemon at start', () => {
  test('FSM_SCHEDULE_SWEEP="99 * * * *": `fsm-sync run` exits 2 naming FSM_SCHEDULE_SWEEP and the accepted forms', async () => {
    const emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
    const dir = tempDir()
    const port = await freePort()
    const r = await runUntilExit(daemonEnv(emu, dir, port, {}, { FSM_SCHEDULE_SWEEP: '99 * * * *' }), port)
    expect(r.code, r.output).toBe(2)
    expect(r.output).toContain('FSM_SCHEDULE_SWEEP: "99 * * * *" is not a valid cron expression (Invalid value for minute: 99)')
    expect(r.output).toContain('5 fields')
    expect(r.output).toContain('6 with seconds first')
  })

  test('"17 25 * * *" and a date that never comes (30 February) in the config file: `run` exits 2 and `doctor` fails, naming the file keys', async () => {
    const emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
    const dir = tempDir()
    const port = await freePort()
    const env = daemonEnv(emu, dir, port, { schedules: { sweep: '17 25 * * *', reconcile: '0 0 30 2 *' } })
    const file = env.FSM_CONFIG!
    const run = await runUntilExit(env, port)
    expect(run.code, run.output).toBe(2)
    expect(run.output).toContain(`schedules.sweep (in ${file}): "17 25 * * *" is not a valid cron expression (Invalid value for hour: 25)`)
    expect(run.output).toContain(`schedules.reconcile (in ${file}): "0 0 30 2 *" never fires`)
    // doctor reports the configuration line by line on stdout (finding it is its job) and fails.
    const doctor = await runCli(['doctor'], env)
    expect(doctor.code, doctor.stdout).toBe(1)
    expect(doctor.stdout).toContain(`✗ configuration schedules.sweep (in ${file}): "17 25 * * *" is not a valid cron expression`)
    expect(doctor.stdout).toContain(`✗ configuration schedules.reconcile (in ${file}): "0 0 30 2 *" never fires`)
  })
})

test('/readyz is not ready while a schedule that is on has no next run', async () => {
  const emu = await emulatorEnv({ counts: { clients: 1, jobs: 1, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const dir = tempDir()
  const config = loadConfig({
    env: {
      FSM_BASE_URL: emu.url,
      FSM_API_KEY: emu.apiKey,
      FSM_DB: path.join(dir, 'mirror.db'),
      FSM_HTTP_HOST: '127.0.0.1',
      FSM_HTTP_PORT: '0',
      FSM_RATE_LIMIT: '100000',
    },
  })
  // The config refuses such a value; set it behind its back, as a croner that runs out of dates would.
  const schedules = {
    ...config.schedules,
    sweep: 'off',
    reference: NEVER,
    reconcile: '0 0 30 2 *',
    calendarA: NEVER,
    calendarB: NEVER,
    accounting: NEVER,
    deliveries: NEVER,
  }
  const logger = createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) })
  const daemon = await startDaemon({ ...config, schedules }, { logger })
  try {
    const r = await get(`${daemon.url}/readyz`)
    expect(r.status).toBe(503)
    const body = JSON.parse(r.text) as { status: string; reason: string; next: Record<string, string | null> }
    expect(body.status).toBe('not ready')
    expect(body.reason).toContain('reconcile')
    expect(body.next).toMatchObject({ reconcile: null, sweep: 'off' })
    expect(body.next.reference).toMatch(/^\d{4}-/)
  } finally {
    await daemon.stop()
  }
})
