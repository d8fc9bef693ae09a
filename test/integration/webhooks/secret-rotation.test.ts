// Secret rotation: after `webhooks register` issues a new secret, deliveries signed with
// either secret are accepted until the grace period ends; then the old one is refused (401).
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import { FakeClock } from '../../support/fake-clock.js'
import { T, hex, jobPayload, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'

const OLD = 'whsec_old_secret_0123456789'
const NEW = 'whsec_new_secret_0123456789'
const HOUR = 3_600_000

let env: WebhookEnv
let clock: FakeClock
beforeEach(async () => {
  clock = new FakeClock(Date.parse('2026-03-01T12:00:00.000Z'))
  env = await webhookEnv({ envSecrets: [], clock, rotationGraceHours: 24 })
})
afterEach(() => env.close())

let n = 0
const send = (secret: string) => env.deliver(`rot-${n++}`, 'job.updated', jobPayload(hex(1), T(n)), secret).then((r) => r.status)

describe('secret rotation', () => {
  test('no secret at all: every delivery refused with a log line naming the fix', async () => {
    expect(await send(OLD)).toBe(401)
    expect(env.logs()).toContain('fsm-sync webhooks register --url URL')
    expect(env.inboxCount()).toBe(0)
  })

  test('both secrets accepted within the grace period, the old one refused after it', async () => {
    const store = env.service.secrets
    store.record('ep1', 'https://a.example/webhooks', OLD, new Date(clock.now()).toISOString())
    expect(await send(OLD)).toBe(200)
    expect(await send(NEW)).toBe(401)

    await clock.advance(HOUR)
    store.record('ep1', 'https://b.example/webhooks', NEW, new Date(clock.now()).toISOString())
    expect(await send(OLD)).toBe(200)
    expect(await send(NEW)).toBe(200)

    await clock.advance(24 * HOUR - 1)
    expect(await send(OLD)).toBe(200)
    await clock.advance(2)
    expect(await send(OLD)).toBe(401)
    expect(await send(NEW)).toBe(200)
    expect(env.rows('SELECT verified_with FROM webhook_inbox ORDER BY seq').map((r) => r.verified_with)).toEqual([
      'endpoint ep1 (current)',
      'endpoint ep1 (previous)',
      'endpoint ep1 (current)',
      'endpoint ep1 (previous)',
      'endpoint ep1 (current)',
    ])
    expect(store.current()).toMatchObject({ endpointId: 'ep1', url: 'https://b.example/webhooks', supersededAt: null })
    expect(env.logs()).not.toContain(OLD)
    expect(env.logs()).not.toContain(NEW)
  })

  test('FSM_WEBHOOK_SECRETS are accepted beside the stored ones', async () => {
    await env.close()
    env = await webhookEnv({ envSecrets: ['whsec_env_first_0123', 'whsec_env_second_0123'], clock })
    env.service.secrets.record('ep1', 'https://a.example/webhooks', NEW, new Date(clock.now()).toISOString())
    expect(await send('whsec_env_first_0123')).toBe(200)
    expect(await send('whsec_env_second_0123')).toBe(200)
    expect(await send(NEW)).toBe(200)
    expect(env.rows('SELECT verified_with FROM webhook_inbox ORDER BY seq').map((r) => r.verified_with)).toEqual([
      'FSM_WEBHOOK_SECRETS#0',
      'FSM_WEBHOOK_SECRETS#1',
      'endpoint ep1 (current)',
    ])
  })
})
