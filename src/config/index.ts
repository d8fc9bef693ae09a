export {
  ConfigSchema,
  RETENTION_OFF,
  SCHEDULE_CONTINUOUS,
  SCHEDULE_OFF,
  StreamName,
  schedulesOff,
  postgresSecrets,
  postgresUrlProblem,
  type Config,
  type ConfigInput,
  type ScheduleName,
} from './schema.js'
export { loadConfig, ENV_KEYS, ENV_VARIABLES, FLAG_KEYS, type ConfigSources, type StreamChoice } from './load-config.js'
export { ConfigError, type ConfigIssue } from './config-error.js'
