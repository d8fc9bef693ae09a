// One pino root logger for the process. Secrets are redacted by path wherever they appear, and
// the API key's value is also scrubbed from any string field as a last line of defence.
import { pino, type Logger, type DestinationStream } from 'pino'

export type { Logger }

/** Every place a secret can sit in a log object: headers, config, errors. */
export const REDACT_PATHS = [
  'apiKey',
  'key',
  'secret',
  'secrets',
  'webhookSecret',
  'webhookSecrets',
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
  'destination.postgres.url',
  'postgres.url',
  'postgresUrl',
  'connectionString',
  '*.apiKey',
  '*.secret',
  '*.secrets',
  '*.webhookSecrets',
  '*.postgresUrl',
  '*.connectionString',
  '*.destination.postgres.url',
  '*.authorization',
  '*.signature',
  '*.password',
  '*.token',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers["x-service-signature"]',
]

export interface LoggerOptions {
  level?: string
  /** Values that must never appear in a log line, whatever field holds them. */
  secrets?: readonly string[]
  destination?: DestinationStream
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length >= 8)
  const scrub = (line: string): string => {
    let out = line
    for (const s of secrets) out = out.split(s).join('[Redacted]')
    return out
  }
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: 'fsm-sync' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      hooks: secrets.length === 0 ? {} : { streamWrite: scrub },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  )
}
