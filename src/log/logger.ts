// One pino root logger for the process. Secrets are redacted by path wherever they appear, and
// the API key's value is also scrubbed from any string field as a last line of defence. Lines go to
// stderr: stdout belongs to a command's result (a table, or one JSON document with --json), and
// stderr is where container runtimes and service managers collect a daemon's logs. An error's
// message (which names the fix) is always logged; its stack trace only at debug level or below.
import { createRequire } from 'node:module'
import type { Logger, DestinationStream } from 'pino'
import type * as PinoModule from 'pino'

export type { Logger }

/** Every place a secret can sit in a log object: headers, config, errors. */
export const REDACT_PATHS = [
  'apiKey',
  'key',
  'secret',
  'secrets',
  'webhookSecret',
  'webhookSecrets',
  'secretsKey',
  'signature',
  'password',
  'token',
  'authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-service-signature"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-service-signature"]',
  'config.apiKey',
  'config.webhookSecrets',
  'config.destination.postgres.url',
  'config.destination.postgres.password',
  'destination.postgres.url',
  'destination.postgres.password',
  'postgres.url',
  'postgresUrl',
  'connectionString',
  '*.apiKey',
  '*.secret',
  '*.secrets',
  '*.webhookSecrets',
  '*.secretsKey',
  '*.postgresUrl',
  '*.connectionString',
  '*.destination.postgres.url',
  '*.destination.postgres.password',
  '*.authorization',
  '*.signature',
  '*.password',
  '*.token',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers["x-service-signature"]',
]

/**
 * Values that must never appear in a log line, whatever field holds them. A set that grows: a key
 * first read by a reload of the configuration (a new account, a rotated key) is added while the
 * logger runs. Values shorter than 8 characters are too common to scrub.
 */
export class SecretValues {
  readonly #values = new Set<string>()
  constructor(values: Iterable<string> = []) {
    this.add(values)
  }
  add(values: Iterable<string>): void {
    for (const v of values) if (v.length >= 8) this.#values.add(v)
  }
  scrub(line: string): string {
    let out = line
    for (const s of this.#values) if (out.includes(s)) out = out.split(s).join('[Redacted]')
    return out
  }
}

export interface LoggerOptions {
  level?: string
  /** Values that must never appear in a log line, whatever field holds them. */
  secrets?: readonly string[] | SecretValues
  destination?: DestinationStream
}

/** pino, loaded when the first logger is made: a command that never logs (`status`, `query`) does not load it. */
const loadPino = (): typeof PinoModule.pino => (createRequire(import.meta.url)('pino') as typeof PinoModule).pino

/** The `err` serializer: pino's, without stack traces unless `withStack()` says so. */
function errSerializer(pino: typeof PinoModule.pino, withStack: () => boolean): (err: Error) => Record<string, unknown> {
  return (err) => {
    const out = pino.stdSerializers.err(err) as unknown as Record<string, unknown>
    return withStack() ? out : dropStacks(out, 0)
  }
}

function dropStacks(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  const { stack: _stack, ...rest } = value
  // pino's serializer joins a cause's stack into the top one; a cause kept as a property has its own.
  for (const [k, v] of Object.entries(rest))
    if (depth < 4 && v !== null && typeof v === 'object' && !Array.isArray(v) && 'stack' in v) rest[k] = dropStacks(v, depth + 1)
  return rest
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets instanceof SecretValues ? options.secrets : new SecretValues(options.secrets)
  const pino = loadPino()
  let logger: Logger | undefined = undefined
  const debugging = () => logger?.isLevelEnabled('debug') === true
  logger = pino(
    {
      level: options.level ?? 'info',
      serializers: { err: errSerializer(pino, debugging) },
      base: { service: 'fsm-sync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: (line) => secrets.scrub(line) },
    },
    options.destination ?? pino.destination({ dest: 2, sync: false }),
  )
  return logger
}
