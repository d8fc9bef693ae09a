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
export {
  loadConfig,
  loadAccounts,
  ENV_KEYS,
  ENV_VARIABLES,
  FLAG_KEYS,
  type ConfigSources,
  type StreamChoice,
  type LoadedConfig,
} from './load-config.js'
export { diffAccounts, ACCOUNT_ID_PATTERN, DEFAULT_ACCOUNT_ID, type AccountConfig, type AccountsDiff } from './accounts.js'
export { ConfigError, type ConfigIssue } from './config-error.js'
