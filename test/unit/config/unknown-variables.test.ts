// An FSM_* variable fsm-sync does not read: a near miss of one it reads (FSM_RATELIMIT) is
// refused, since it would otherwise do nothing; Kubernetes service-link variables
// (a Service named `fsm` or `fsm-sync` puts FSM_* ones in every pod) are ignored; any other (a
// Compose interpolation variable) draws one warning.
import { expect, test } from 'vitest'
import { ConfigError, ENV_VARIABLES, loadConfig } from '../../../src/config/index.js'
import { main } from '../../../src/cli/main.js'
import { Writable } from 'node:stream'
import { tmpdir } from 'node:os'
import path from 'node:path'

function issuesOf(env: Record<string, string>): ConfigError['issues'] {
  try {
    loadConfig({ env })
  } catch (err) {
    if (err instanceof ConfigError) return err.issues
    throw err
  }
  return []
}

test('a near miss of a variable it reads is a configuration error naming it and the fix', () => {
  const issues = issuesOf({
    FSM_RATELIMIT: '10',
    FSM_HTTP_PROT: '8787',
    FSM_LOGLEVEL: 'debug',
    FSM_SCHEDULE_SWEPE: 'off',
    HOME: '/root',
  })
  expect(issues).toEqual([
    { key: 'FSM_HTTP_PROT', message: 'is not a variable fsm-sync reads; did you mean FSM_HTTP_PORT?' },
    { key: 'FSM_LOGLEVEL', message: 'is not a variable fsm-sync reads; did you mean FSM_LOG_LEVEL?' },
    { key: 'FSM_RATELIMIT', message: 'is not a variable fsm-sync reads; did you mean FSM_RATE_LIMIT?' },
    { key: 'FSM_SCHEDULE_SWEPE', message: 'is not a variable fsm-sync reads; did you mean FSM_SCHEDULE_SWEEP?' },
  ])
})

test('Kubernetes service-link variables are ignored; any other unknown FSM_ variable is a warning, once each', () => {
  const warnings: string[] = []
  const env = {
    // Service `fsm`, port 8787.
    FSM_SERVICE_HOST: '10.0.0.7',
    FSM_SERVICE_PORT: '8787',
    FSM_SERVICE_PORT_HTTP: '8787',
    FSM_PORT: 'tcp://10.0.0.7:8787',
    FSM_PORT_8787_TCP: 'tcp://10.0.0.7:8787',
    FSM_PORT_8787_TCP_ADDR: '10.0.0.7',
    FSM_PORT_8787_TCP_PORT: '8787',
    FSM_PORT_8787_TCP_PROTO: 'tcp',
    // Service `fsm-sync`.
    FSM_SYNC_SERVICE_HOST: '10.0.0.8',
    FSM_SYNC_SERVICE_PORT: '8787',
    FSM_SYNC_PORT: 'tcp://10.0.0.8:8787',
    FSM_SYNC_PORT_9000_UDP: 'udp://10.0.0.8:9000',
    // A Compose interpolation variable.
    FSM_VERSION: '1.4.0',
  }
  expect(() => loadConfig({ env, warn: (m) => warnings.push(m) })).not.toThrow()
  expect(warnings).toEqual([
    expect.stringMatching(/^FSM_VERSION is not a variable fsm-sync reads \(it reads FSM_BASE_URL, .*FSM_CONFIG\); ignored$/),
  ])
})

test('a service-link shape that is also a near miss warns instead of stopping the process', () => {
  const warnings: string[] = []
  // A Service named `fsm-http-x` would set FSM_HTTP_X_PORT, two edits from FSM_HTTP_PORT.
  expect(() => loadConfig({ env: { FSM_HTTP_X_PORT: 'tcp://10.0.0.9:80' }, warn: (m) => warnings.push(m) })).not.toThrow()
  expect(warnings).toEqual([
    'FSM_HTTP_X_PORT is not a variable fsm-sync reads; did you mean FSM_HTTP_PORT? (ignored: it has the shape of a Kubernetes service-link variable)',
  ])
})

test('every variable it reads is accepted', () => {
  const env = Object.fromEntries(ENV_VARIABLES.map((n) => [n, n.startsWith('FSM_SCHEDULE_') ? 'off' : '']))
  const warnings: string[] = []
  expect(() =>
    loadConfig({ env: { ...env, FSM_DB_MODE: '0640', FSM_RATE_LIMIT: '60', FSM_HTTP_PORT: '8787' }, warn: (m) => warnings.push(m) }),
  ).not.toThrow()
  expect(warnings).toEqual([])
})

test('the CLI writes the warning to stderr once and goes on', async () => {
  let stderr = ''
  const sink = new Writable({ write: (c: Buffer, _e, cb) => ((stderr += c.toString('utf8')), cb()) })
  const db = path.join(tmpdir(), `fsm-no-mirror-${process.pid}.db`)
  const code = await main(['query', 'SELECT 1'], {
    stdout: sink,
    stderr: sink,
    env: { FSM_DB: db, FSM_VERSION: '1.4.0', FSM_SERVICE_HOST: '10.0.0.7' },
  })
  // It went on to the command, which found no mirror.
  expect(code).toBe(1)
  const lines = stderr.trimEnd().split('\n')
  expect(lines.filter((l) => l.startsWith('fsm-sync: warning: '))).toEqual([
    expect.stringMatching(/^fsm-sync: warning: FSM_VERSION is not a variable/),
  ])
  expect(stderr).toContain(`no mirror at ${db}`)
})
