// `fsm-sync doctor` on a good setup and on each kind of bad one: one line per check, exit 1 on
// any failure, and the key is never printed.
import path from 'node:path'
import Database from 'better-sqlite3'
import { expect, test } from 'vitest'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { freePort } from '../../support/daemon-env.js'

/** A fresh emulator (closed when the test ends) and a setup that passes every check. */
async function setup(): Promise<{ emu: EmulatorEnv; good: Record<string, string> }> {
  const emu = await emulatorEnv({ counts: { clients: 2, jobs: 2, visitsPerJob: 1, invoices: 1, customRecords: 0 } })
  const good = cleanEnv({
    FSM_BASE_URL: emu.url,
    FSM_API_KEY: emu.apiKey,
    FSM_DB: path.join(tempDir(), 'mirror.db'),
    FSM_WEBHOOK_SECRETS: 'whsec_test_secret_value',
    FSM_RATE_LIMIT: '100000',
  })
  return { emu, good }
}

test('a good setup passes every check', async () => {
  const { emu, good } = await setup()
  const r = await runCli(['doctor'], good)
  expect(r.code, r.stdout + r.stderr).toBe(0)
  expect(r.stdout).not.toContain('✗')
  for (const line of [
    'configuration valid',
    'FSM_BASE_URL reachable',
    'FSM_API_KEY valid',
    'clients:read (clients)',
    'objects:read (objects)',
    'integrations:write',
    'mirror writable, migrations applied',
    'webhook secret',
  ]) {
    expect(r.stdout).toContain(`✓ ${line}`)
  }
  expect(r.stdout + r.stderr).not.toContain(emu.apiKey)
})

test('a rejected key', async () => {
  const { good } = await setup()
  const key = 'svc_live_0000000000000000000000000000dead'
  const r = await runCli(['doctor'], { ...good, FSM_API_KEY: key })
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^✗ FSM_API_KEY valid: rejected \(401\): the key is invalid, revoked or expired/m)
  expect(r.stdout + r.stderr).not.toContain(key)
})

test('a key missing a scope names it', async () => {
  const { emu, good } = await setup()
  const minted = await emu.control('POST', '/keys', {
    name: 'narrow',
    scopes: ['clients:read', 'visits:read', 'invoices:read', 'objects:read', 'webhooks:manage', 'integrations:write'],
  })
  const r = await runCli(['doctor'], { ...good, FSM_API_KEY: minted.key as string })
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^✗ jobs:read \(jobs\): missing scope jobs:read: add it to the key/m)
  expect(r.stdout).toMatch(/^✓ clients:read \(clients\)/m)
  expect(r.stdout + r.stderr).not.toContain(minted.key as string)
})

test('an unreachable base URL', async () => {
  const { good } = await setup()
  const r = await runCli(['doctor'], { ...good, FSM_BASE_URL: `http://127.0.0.1:${await freePort()}` })
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^✗ FSM_BASE_URL reachable: Network error \(ECONNREFUSED\)/m)
})

test('an invalid configuration is listed, not exit 2', async () => {
  const { good } = await setup()
  const r = await runCli(['doctor'], { ...good, FSM_RATE_LIMIT: 'many', FSM_HTTP_PORT: '99999' })
  expect(r.code).toBe(1)
  expect(r.stdout).toMatch(/^✗ configuration FSM_RATE_LIMIT: /m)
  expect(r.stdout).toMatch(/^✗ configuration FSM_HTTP_PORT: /m)
})

test('no webhook secret is a note, not a failure, and at the default budget the GETs are not paced', async () => {
  const { emu, good } = await setup()
  // Webhooks are optional, and the budget is the default one (60/min, paced one per second in the daemon).
  const { FSM_WEBHOOK_SECRETS: _omit, FSM_RATE_LIMIT: _default, ...rest } = good
  const r = await runCli(['doctor'], rest)
  expect(r.code, r.stdout + r.stderr).toBe(0)
  expect(r.stdout).toMatch(/^– webhook secret: none \(webhooks are optional.*run `fsm-sync webhooks register/m)
  expect(r.stdout).not.toContain('✗')
  const json = await runCli(['doctor', '--json'], rest)
  expect(json.code).toBe(0)
  const doc = JSON.parse(json.stdout) as { ok: boolean; checks: { label: string; ok: boolean; note?: boolean }[] }
  expect(doc.ok).toBe(true)
  expect(doc.checks.find((c) => c.label === 'webhook secret')).toMatchObject({ ok: true, note: true })
  // Paced at 60/min, a run's n GETs would start one per 1,004 ms after the first two: a span of at
  // least (n - 2) spacings. Back to back, each run's take a fraction of that, the second run (its
  // starts within the minute of the first's) too.
  const starts = ((await emu.control('GET', '/requests')) as { startedAt: string }[]).map((e) => Date.parse(e.startedAt))
  const n = starts.length / 2
  expect(n).toBeGreaterThan(8)
  for (const run of [starts.slice(0, n), starts.slice(n)]) {
    const span = Math.max(...run) - Math.min(...run)
    expect(span).toBeLessThan(((n - 2) * 1004) / 2)
  }
})

test("doctor spends the key's budget inside the window shared with the other processes on the mirror", async () => {
  const { emu, good } = await setup()
  const r = await runCli(['doctor'], good)
  expect(r.code, r.stdout + r.stderr).toBe(0)
  const upstream = ((await emu.control('GET', '/requests')) as unknown[]).length
  expect(upstream).toBeGreaterThan(5)
  // Every GET doctor made is a start in the mirror's request_starts, where a daemon beside counts it.
  const db = new Database(good.FSM_DB, { readonly: true })
  try {
    expect(db.prepare('SELECT count(*) FROM request_starts').pluck().get()).toBe(upstream)
  } finally {
    db.close()
  }
})
