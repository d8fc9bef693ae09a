// `fsm-sync healthcheck` (the image's HEALTHCHECK) against a real daemon whose listener is set in
// the config file only: it reads the same configuration as `run`, exits 0 while the daemon answers
// and 1 with one line once it is gone, and 1 (never Docker's reserved 2) on a bad configuration.
import { describe, expect, test } from 'vitest'
import { probeHost } from '../../../src/cli/healthcheck.js'
import { emulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { idleSchedules } from '../../support/schedules.js'
import { tempDir } from '../../support/temp-mirror.js'
import { daemonEnv, freePort, get, startRun, until } from '../../support/daemon-env.js'

describe('fsm-sync healthcheck', () => {
  test('probes the port and host of the config file, and says what failed once the daemon is gone', async () => {
    const emu = await emulatorEnv({ counts: { clients: 2, jobs: 1, visitsPerJob: 0, invoices: 0, customRecords: 0 } })
    const port = await freePort()
    // The listener is in the file alone: no FSM_HTTP_* variable says where the daemon is.
    const env = daemonEnv(emu, tempDir(), 0, { httpHost: '127.0.0.1', httpPort: port, schedules: idleSchedules() })
    delete env.FSM_HTTP_HOST
    delete env.FSM_HTTP_PORT
    const run = startRun(env)
    try {
      await until('/readyz 200', async () => (await get(`http://127.0.0.1:${port}/readyz`)).status === 200)
      const alive = await runCli(['healthcheck'], env)
      expect(alive.code, alive.stderr).toBe(0)
      expect(alive.stdout).toBe(`healthy: GET http://127.0.0.1:${port}/healthz answered 200\n`)
      const ready = await runCli(['healthcheck', '--ready'], env)
      expect(ready.code, ready.stderr).toBe(0)
      expect(ready.stdout).toContain(`:${port}/readyz answered 200`)
    } finally {
      run.child.kill('SIGTERM')
      expect((await run.exited).code, run.output()).toBe(0)
    }
    const gone = await runCli(['healthcheck'], env)
    expect(gone.code).toBe(1)
    expect(gone.stdout).toBe('')
    expect(gone.stderr).toBe(
      `fsm-sync healthcheck: GET http://127.0.0.1:${port}/healthz: connection refused (is \`fsm-sync run\` listening there?)\n`,
    )
  }, 60_000)

  test('a configuration that does not load is unhealthy (exit 1), with the key that is wrong', async () => {
    const r = await runCli(['healthcheck'], cleanEnv({ FSM_HTTP_PORT: 'eighty' }))
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/^fsm-sync healthcheck: invalid configuration: FSM_HTTP_PORT: /)
  })

  test('a wildcard listener is probed on loopback; a named host as it is', () => {
    expect(probeHost('0.0.0.0')).toBe('127.0.0.1')
    expect(probeHost('::')).toBe('::1')
    expect(probeHost('[::]')).toBe('::1')
    expect(probeHost('127.0.0.1')).toBe('127.0.0.1')
    expect(probeHost('::1')).toBe('::1')
    expect(probeHost('localhost')).toBe('localhost')
  })
})
