export {
  ConfigSchema,
  OBJECT_STREAM,
  RETENTION_OFF,
  SCHEDULE_OFF,
  STREAM_NAMES,
  StreamName,
  schedulesOff,
  postgresSecrets,
  postgresUrlProblem,
  type Config,
  type ConfigInput,
  type CoreStreamName,
  type ScheduleName,
} from './schema.js'
export { loadConfig, ENV_KEYS, FLAG_KEYS, POSTGRES_ENV_KEYS, SCHEDULE_ENV_KEYS, type ConfigSources } from './load-config.js'
export { ConfigError, type ConfigIssue } from './config-error.js'
