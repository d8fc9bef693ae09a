// `fsm-sync webhooks register | list | deliveries` as a user runs them (child process, real mirror
// file, the emulator upstream): the secret is stored, never printed.
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { readSecretsFile, secretsPathFor } from '../../../src/store/repositories/secrets-file.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { cleanEnv, runCli } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'

let emu: EmulatorEnv
let env: Record<string, string>
let db: string
beforeAll(async () => {
  emu = await emulatorEnv({ allowHttpWebhooks: true, counts: { clients: 1, jobs: 1, invoices: 1, customRecords: 0 } })
  db = path.join(tempDir(), 'mirror.db')
  env = cleanEnv({ FSM_BASE_URL: emu.url, FSM_API_KEY: emu.apiKey, FSM_DB: db })
})
afterAll(() => emu.close())

const storedSecrets = () =>
  readSecretsFile(secretsPathFor(db)).map((e) => ({
    endpoint_id: e.endpointId,
    url: e.url,
    secret: e.secret,
    superseded_at: e.supersededAt,
  }))

describe('fsm-sync webhooks', () => {
  test('register without --url is a usage error', async () => {
    const r = await runCli(['webhooks', 'register'], env)
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('--url is required')
  })

  test('register, re-register with a new URL, list, deliveries', async () => {
    const a = await runCli(['webhooks', 'register', '--url', 'http://127.0.0.1:9/webhooks'], env)
    expect(a.stderr).toBe('')
    expect(a.code).toBe(0)
    expect(a.stdout).toMatch(/registered endpoint [0-9a-f]{24} for http:\/\/127\.0\.0\.1:9\/webhooks \(17 events\)/)
    const b = await runCli(['webhooks', 'register', '--url', 'http://127.0.0.1:10/webhooks'], env)
    expect(b.code).toBe(0)
    expect(b.stdout).toContain('the previous one stays accepted for 24 h')
    const secrets = storedSecrets()
    expect(secrets).toHaveLength(2)
    expect(secrets[0]!.superseded_at).not.toBeNull()
    expect(secrets[1]!.superseded_at).toBeNull()
    for (const s of secrets) expect(a.stdout + a.stderr + b.stdout + b.stderr).not.toContain(s.secret)

    const list = await runCli(['webhooks', 'list'], env)
    expect(list.code).toBe(0)
    expect(list.stdout).toContain(secrets[1]!.endpoint_id)
    expect(list.stdout).toMatch(/active\s+17\s+yes\s+http:\/\/127\.0\.0\.1:10\/webhooks/)
    for (const s of secrets) expect(list.stdout).not.toContain(s.secret)

    // A write now is delivered to a closed port: the record says retrying.
    const [client] = await emu.state('clients')
    await emu.api('PUT', `/api/v1/clients/${client.id}`, { notes: 'x' })
    await emu.control('POST', '/deliveries/flush')
    const deliveries = await runCli(['webhooks', 'deliveries', '--status', 'retrying'], env)
    expect(deliveries.code).toBe(0)
    expect(deliveries.stdout).toMatch(/client\.updated\s+retrying\s+1/)
  })
})
