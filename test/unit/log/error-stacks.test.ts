// An error in a log line keeps its message (which names the fix) at every level; its stack trace,
// and its cause's, appear only when the level is debug or below.
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'

function logged(level: string): Record<string, any> {
  let text = ''
  const destination = new Writable({ write: (c: Buffer, _e, cb) => ((text += c.toString('utf8')), cb()) })
  const logger = createLogger({ level, destination })
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })
  logger.error({ err: new Error('Network error on GET /api/v1/clients: check FSM_BASE_URL', { cause }) }, 'sweep failed')
  return JSON.parse(text.trim()) as Record<string, any>
}

test('info: the message and fields of the error, no stack trace', () => {
  const line = logged('info')
  expect(line.err.message).toBe('Network error on GET /api/v1/clients: check FSM_BASE_URL: connect ECONNREFUSED 127.0.0.1:1')
  expect(line.err.type).toBe('Error')
  expect(JSON.stringify(line)).not.toMatch(/\n\s+at /)
  expect(line.err).not.toHaveProperty('stack')
})

test('debug: the stack trace too, its cause included', () => {
  const line = logged('debug')
  expect(line.err.stack).toMatch(/^Error: Network error[^\n]*\n\s+at /)
  expect(line.err.stack).toContain('caused by: Error: connect ECONNREFUSED')
})
