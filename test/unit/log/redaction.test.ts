import { Writable } from 'node:stream'
import { describe, expect, test } from 'vitest'
import { createLogger, SecretValues } from '../../../src/log/logger.js'

const KEY = 'svc_live_aaaabbbbccccddddeeeeffff00001111'
const SECRET = 'whsec_super_secret_value_123456'
const SIGNATURE = 'a'.repeat(64)

function capture(secrets: string[] = [KEY, SECRET]) {
  const lines: string[] = []
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'))
      cb()
    },
  })
  const logger = createLogger({ level: 'trace', secrets, destination })
  return { logger, text: () => lines.join('') }
}

describe('logs never carry a secret', () => {
  test.each([
    ['api key field', { apiKey: KEY }],
    ['authorization header', { headers: { authorization: `Bearer ${KEY}` } }],
    ['x-api-key header', { headers: { 'x-api-key': KEY } }],
    ['request headers', { req: { headers: { 'x-api-key': KEY, authorization: `Bearer ${KEY}`, 'x-service-signature': SIGNATURE } } }],
    ['webhook secret', { secret: SECRET }],
    ['webhook secrets list', { webhookSecrets: [SECRET] }],
    ['signature', { signature: SIGNATURE }],
    ['nested config', { config: { apiKey: KEY, webhookSecrets: [SECRET] } }],
    ['key inside a message string', { detail: `request failed with key ${KEY}` }],
    ['secret inside an error', { err: new Error(`bad secret ${SECRET}`) }],
  ])('%s', (_name, fields) => {
    const { logger, text } = capture()
    logger.info(fields, 'event')
    logger.info(`message text mentioning ${KEY}`)
    const out = text()
    expect(out).toContain('event')
    expect(out).not.toContain(KEY)
    expect(out).not.toContain(SECRET)
    expect(out).not.toContain(SIGNATURE)
    expect(out).toContain('[Redacted]')
  })

  test('ordinary fields are kept', () => {
    const { logger, text } = capture()
    logger.info({ stream: 'jobs', rows: 100 }, 'page stored')
    const line = JSON.parse(text().trim()) as Record<string, unknown>
    expect(line).toMatchObject({ level: 'info', stream: 'jobs', rows: 100, msg: 'page stored', service: 'fsm-sync' })
  })

  test('a key added after the logger was made (a reload of the accounts) is scrubbed from then on', () => {
    const secrets = new SecretValues([KEY])
    const lines: string[] = []
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString('utf8'))
        cb()
      },
    })
    const logger = createLogger({ level: 'info', secrets, destination })
    const later = 'svc_live_9999888877776666555544443333'
    secrets.add([later, 'short'])
    logger.info(`keys ${KEY} and ${later}, a short word`)
    const out = lines.join('')
    expect(out).not.toContain(KEY)
    expect(out).not.toContain(later)
    expect(out).toContain('a short word')
  })
})
