// Registration, delivery, rotation and gap detection end to end against the emulator (which signs
// and sends deliveries as the spec says) over real loopback HTTP and a real mirror file.
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { jobs } from '../../../connectors/jobs.js'
import { clients } from '../../../connectors/clients.js'
import { createLogger } from '../../../src/log/logger.js'
import { readSecretsFile } from '../../../src/store/repositories/secrets-file.js'
import { DeliveryGapCheck } from '../../../src/webhooks/delivery-gaps.js'
import { startIntakeServer, type IntakeServer } from '../../../src/webhooks/intake-server.js'
import { listDeliveries, listEndpoints, registerEndpoint } from '../../../src/webhooks/registration.js'
import { createWebhookService, type WebhookService } from '../../../src/webhooks/webhook-service.js'
import { emulatorEnv, type EmulatorEnv } from '../../support/emulator-env.js'
import { compareWithEmulator, syncEnv, type SyncEnv } from '../../support/sync-env.js'

let emu: EmulatorEnv
let env: SyncEnv
let service: WebhookService
let first: IntakeServer
let second: IntakeServer | undefined
const logs: string[] = []

beforeAll(async () => {
  emu = await emulatorEnv({ allowHttpWebhooks: true, counts: { clients: 5, jobs: 5, visitsPerJob: 1, invoices: 3, customRecords: 0 } })
  env = await syncEnv(emu)
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString('utf8')), cb()) }),
  })
  service = createWebhookService({
    sqlite: env.app.mirror.sqlite,
    logger,
    client: env.app.client,
    config: { webhookSecrets: [], webhooks: { path: '/webhooks', maxBodyBytes: 1 << 20, maxBacklog: 10_000, rotationGraceHours: 24 } },
  })
  service.start()
  first = await startIntakeServer(service.handler, { path: '/webhooks' })
  await env.sync({ streams: [clients, jobs] })
})

afterAll(async () => {
  await first.close()
  await second?.close()
  await service.stop()
  await env.close()
  await emu.close()
})

const stored = () => readSecretsFile(service.secrets.file)

const settle = async () => {
  await emu.control('POST', '/deliveries/flush')
  await service.processor.drained()
}

describe('webhooks end to end against the emulator', () => {
  test('register creates the endpoint for all seventeen events and stores its secret', async () => {
    const r = await registerEndpoint(env.app.client, service.secrets, first.url, Date.now)
    expect(r).toMatchObject({ action: 'created', url: first.url, rotated: false })
    const [endpoint] = await emu.state('webhooks')
    expect(endpoint.events).toHaveLength(17)
    expect(stored().map(({ endpointId, url, supersededAt }) => ({ endpointId, url, supersededAt }))).toEqual([
      { endpointId: r.endpointId, url: first.url, supersededAt: null },
    ])
    expect((await listEndpoints(env.app.client)).map((e) => e.id)).toEqual([r.endpointId])
    expect(JSON.stringify(await listEndpoints(env.app.client))).not.toContain('whsec_')
    // Re-running with the same URL changes nothing and issues no secret.
    expect(await registerEndpoint(env.app.client, service.secrets, first.url, Date.now)).toMatchObject({
      action: 'unchanged',
      rotated: false,
    })
    expect(stored()).toHaveLength(1)
  })

  test('an upstream write arrives signed, is stored, applied, and its delivery record says success', async () => {
    const [job] = await emu.state('jobs')
    const res = await emu.api('PUT', `/api/v1/jobs/${job.id}`, { notes: 'changed through the API' })
    expect(res.status).toBe(200)
    await settle()
    expect(service.metrics.intake.stored).toBeGreaterThanOrEqual(1)
    expect(await compareWithEmulator(emu, env, [jobs])).toEqual([])
    const endpointId = service.secrets.current()!.endpointId
    const ok = await listDeliveries(env.app.client, endpointId, { status: 'success' })
    expect(ok.map((d) => d.event)).toContain('job.updated')
  })

  test('a status change: status applied, follow-up GET brings the full record', async () => {
    const [, job] = await emu.state('jobs')
    const next = job.jobStatus === 'completed' ? 'scheduled' : 'completed'
    expect((await emu.api('PUT', `/api/v1/jobs/${job.id}`, { jobStatus: next })).status).toBe(200)
    await settle()
    expect(env.rows('SELECT job_status FROM jobs WHERE id = ?', job.id)).toEqual([{ job_status: next }])
    expect(service.metrics.processor.followUps).toBeGreaterThanOrEqual(1)
    expect(await compareWithEmulator(emu, env, [jobs])).toEqual([])
  })

  test('re-registering with a new URL rotates the secret; both accepted during the grace period', async () => {
    second = await startIntakeServer(service.handler, { path: '/webhooks' })
    const r = await registerEndpoint(env.app.client, service.secrets, second.url, Date.now)
    expect(r).toMatchObject({ action: 'updated', rotated: true, url: second.url })
    expect(stored().map((e) => ({ url: e.url, superseded: e.supersededAt !== null }))).toEqual([
      { url: first.url, superseded: true },
      { url: second.url, superseded: false },
    ])
    expect(service.secrets.active(Date.now(), 24)).toHaveLength(2)
    const [client] = await emu.state('clients')
    expect((await emu.api('PUT', `/api/v1/clients/${client.id}`, { notes: 'after rotation' })).status).toBe(200)
    await settle()
    expect(env.rows(`SELECT verified_with FROM webhook_inbox WHERE event = 'client.updated'`)).toEqual([
      { verified_with: `endpoint ${r.endpointId} (current)` },
    ])
    expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
  })

  test('a delivery that failed (receiver down) is found by the gap check, once', async () => {
    await second!.close()
    second = undefined
    const [, client] = await emu.state('clients')
    expect((await emu.api('PUT', `/api/v1/clients/${client.id}`, { notes: 'while the receiver is down' })).status).toBe(200)
    await emu.control('POST', '/deliveries/flush')
    const gaps = new DeliveryGapCheck({
      client: env.app.client,
      sqlite: env.app.mirror.sqlite,
      secrets: service.secrets,
      graceHours: 24,
      logger: createLogger({ level: 'silent' }),
    })
    const plan = await gaps.check()
    expect(plan.streams).toEqual(['clients'])
    expect(plan.missed.map((d) => d.status)).toEqual(['retrying'])
    plan.commit()
    expect((await gaps.check()).streams).toEqual([])
    // A cursor that does not parse is set aside: the failure is reported again, once, and the
    // commit after it stores a good cursor.
    const warnings: string[] = []
    const watched = new DeliveryGapCheck({
      client: env.app.client,
      sqlite: env.app.mirror.sqlite,
      secrets: service.secrets,
      graceHours: 24,
      logger: createLogger({
        level: 'warn',
        destination: new Writable({ write: (c: Buffer, _e, cb) => (warnings.push(c.toString('utf8')), cb()) }),
      }),
    })
    for (const garbage of ['not json', '{"since":"later","idsAtSince":[]}']) {
      env.app.mirror.sqlite.prepare(`UPDATE webhook_state SET value = ? WHERE key = 'delivery-gaps'`).run(garbage)
      const again = await watched.check()
      expect(again.streams).toEqual(['clients'])
      again.commit()
      expect((await watched.check()).streams).toEqual([])
    }
    const unread = warnings
      .filter((w) => w.includes('stored delivery-gap cursor could not be read'))
      .map((w) => (JSON.parse(w) as { problem: string }).problem)
    expect(unread).toEqual([expect.stringMatching(/^not JSON/), 'since: not a time'])
    // The sweep it asks for brings the change the lost delivery carried.
    await env.sync({ streams: [clients] })
    expect(await compareWithEmulator(emu, env, [clients])).toEqual([])
  })

  test('no secret and no signature ever reached the logs', () => {
    const secrets = stored().map((e) => e.secret)
    expect(secrets.every((s) => s.length > 16)).toBe(true)
    const text = logs.join('')
    for (const s of secrets) expect(text).not.toContain(s)
  })
})
