// A delivery id over 200 characters used to be answered "headers are required", though both were
// there. The 400 now says what is wrong: the id's length and the limit.
import { afterEach, beforeEach, expect, test } from 'vitest'
import { sign } from '../../../src/webhooks/signature.js'
import { SECRET, T, hex, jobPayload, webhookEnv, type WebhookEnv } from '../../support/webhook-env.js'

let env: WebhookEnv
beforeEach(async () => {
  env = await webhookEnv({ process: false })
})
afterEach(() => env.close())

test('a delivery id over 200 characters is refused (400) saying the id is too long, not that headers are missing', async () => {
  const body = Buffer.from(JSON.stringify(jobPayload(hex(1), T(1))))
  const res = await env.post(body, {
    'x-service-event': 'job.updated',
    'x-service-delivery': 'd'.repeat(201),
    'x-service-signature': sign(SECRET, body),
  })
  expect(res.status).toBe(400)
  const error = (JSON.parse(res.body) as { error: string }).error
  expect(error).toBe("X-Service-Delivery is 201 characters long; at most 200 are accepted (the upstream's ids are 24)")
  expect(error).not.toContain('required')
  expect(env.inboxCount()).toBe(0)
  // 200 characters is still accepted.
  const ok = await env.post(body, {
    'x-service-event': 'job.updated',
    'x-service-delivery': 'd'.repeat(200),
    'x-service-signature': sign(SECRET, body),
  })
  expect(ok.status).toBe(200)
})
