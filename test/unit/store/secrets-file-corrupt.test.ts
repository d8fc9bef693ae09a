// A corrupt secrets file is reported by position only: the JSON parser's own message quotes the
// text around the fault (a secret here), and the logger prints an error's causes, so neither may
// reach the error the intake logs on every delivery.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.js'
import { readSecretsFile, SecretsFileError } from '../../../src/store/repositories/secrets-file.js'
import { SecretStore } from '../../../src/webhooks/secret-store.js'
import { tempDir } from '../../support/temp-mirror.js'

const SECRET = 'whsec_live_0123456789abcdef0123456789abcdef'

/** The error's messages and stacks along its cause chain. */
function chain(err: unknown): string {
  const parts: string[] = []
  for (let e: unknown = err; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    parts.push((e as Error).message, String((e as Error).stack))
  }
  return parts.join('\n')
}

function logged(err: unknown): string {
  let out = ''
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      out += chunk.toString('utf8')
      cb()
    },
  })
  createLogger({ level: 'info', destination }).error({ err }, 'webhook intake failed unexpectedly: answered 503')
  return out
}

test.each([
  [
    'an unquoted secret',
    `{"version":1,"secrets":[{"endpointId":"ep1","url":"u","secret":${SECRET},"createdAt":"x","supersededAt":null}]}`,
    /an unexpected character/,
  ],
  [
    'a file cut short inside a secret',
    `{"version":1,"secrets":[{"endpointId":"ep1","url":"u","secret":"${SECRET}`,
    /at position \d+, line 1 column \d+|ends early/,
  ],
  ['text after the JSON', `{"version":1,"secrets":[]}\n${SECRET}`, /at position 27, line 2 column 1/],
])(
  'a corrupt secrets file (%s) fails with its position, and no fragment of a secret reaches the error or the log',
  (_name, text, where) => {
    const file = path.join(tempDir(), 'mirror.secrets.json')
    writeFileSync(file, text)
    let caught: unknown
    try {
      new SecretStore(file).active(Date.now(), 24)
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(SecretsFileError)
    expect(caught).toMatchObject({ code: 'SECRETS_FILE_INVALID' })
    for (const fragment of ['whsec', SECRET.slice(6, 16)]) {
      expect(chain(caught)).not.toContain(fragment)
      expect(logged(caught)).not.toContain(fragment)
    }
    expect((caught as Error).message).toMatch(where)
    expect((caught as Error).message).toContain('restore it from a backup')
    expect(() => readSecretsFile(file)).toThrow(/is not valid JSON/)
  },
)
