// The destination's settings: from the environment or the config file, a schema by default, a URL
// that is a secret (never echoed when wrong, never in a log line, its password neither).
import { Writable } from 'node:stream'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { ConfigError, loadConfig, postgresSecrets } from '../../../src/config/index.js'
import { createLogger } from '../../../src/log/logger.js'

const URL_WITH_PASSWORD = 'postgres://fsm:s3cr%40t-pass-9911@db.internal:5432/warehouse'

describe('destination.postgres settings', () => {
  test('no URL: no destination; the schema defaults to fsm', () => {
    expect(loadConfig({ env: {} }).destination.postgres).toEqual({
      schema: 'fsm',
      lockTimeoutSeconds: 30,
      statementTimeoutSeconds: 900,
      maxConnections: 10,
    })
  })

  test("the process's connections to Postgres: a whole number from 1", () => {
    expect(loadConfig({ env: { FSM_POSTGRES_MAX_CONNECTIONS: '3' } }).destination.postgres.maxConnections).toBe(3)
    expect(() => loadConfig({ env: { FSM_POSTGRES_MAX_CONNECTIONS: '0' } })).toThrow(ConfigError)
  })

  test('the lock and statement timeouts: from the environment or the config file, 0 for no limit, whole seconds only', () => {
    const env = { FSM_POSTGRES_LOCK_TIMEOUT: '5', FSM_POSTGRES_STATEMENT_TIMEOUT: '0' }
    expect(loadConfig({ env }).destination.postgres).toMatchObject({ lockTimeoutSeconds: 5, statementTimeoutSeconds: 0 })
    expect(() => loadConfig({ env: { FSM_POSTGRES_LOCK_TIMEOUT: '1.5' } })).toThrow(ConfigError)
  })

  test('FSM_POSTGRES_URL and FSM_POSTGRES_SCHEMA, or the config file', () => {
    expect(loadConfig({ env: { FSM_POSTGRES_URL: URL_WITH_PASSWORD, FSM_POSTGRES_SCHEMA: 'replica' } }).destination.postgres).toMatchObject(
      {
        url: URL_WITH_PASSWORD,
        schema: 'replica',
      },
    )
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'fsm-cfg-')), 'config.json')
    writeFileSync(file, JSON.stringify({ destination: { postgres: { url: URL_WITH_PASSWORD } } }))
    const fromFile = loadConfig({ file, env: { FSM_POSTGRES_SCHEMA: 'other' } }).destination.postgres
    expect(fromFile).toMatchObject({ url: URL_WITH_PASSWORD, schema: 'other' })
  })

  test('a bad URL is refused naming the variable, without echoing the value', () => {
    const bad = 'mysql://root:hunter2-secret@x/y'
    let error: unknown
    try {
      loadConfig({ env: { FSM_POSTGRES_URL: bad } })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const issues = (error as ConfigError).issues
    expect(issues).toEqual([{ key: 'FSM_POSTGRES_URL', message: expect.stringMatching(/postgres:\/\/.*\(the value is not shown\)/) }])
    expect(JSON.stringify(issues)).not.toContain('hunter2')
    expect(() => loadConfig({ env: { FSM_POSTGRES_SCHEMA: 'a"; drop' } })).toThrow(ConfigError)
  })

  test('the URL and its password never reach a log line', () => {
    const lines: string[] = []
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString('utf8'))
        cb()
      },
    })
    const logger = createLogger({ level: 'info', secrets: postgresSecrets(URL_WITH_PASSWORD), destination })
    const config = loadConfig({ env: { FSM_POSTGRES_URL: URL_WITH_PASSWORD } })
    logger.info({ config }, 'starting')
    logger.info({ destination: config.destination }, 'destination')
    logger.info({ connectionString: URL_WITH_PASSWORD, postgresUrl: URL_WITH_PASSWORD }, 'fields')
    logger.error({ err: new Error('password s3cr@t-pass-9911 rejected') }, `cannot use ${URL_WITH_PASSWORD}`)
    const out = lines.join('')
    expect(lines).toHaveLength(4)
    expect(out).not.toContain('s3cr')
    expect(out).not.toContain('pass-9911')
    expect(out).toContain('[Redacted]')
  })
})
