export {
  ConfigSchema,
  OBJECT_STREAM,
  RETENTION_OFF,
  SCHEDULE_CONTINUOUS,
  SCHEDULE_OFF,
  STREAM_NAMES,
  StreamName,
  schedulesOff,
  type Config,
  type ConfigInput,
  type CoreStreamName,
  type ScheduleName,
} from './schema.js'
export { loadConfig, ENV_KEYS, ENV_VARIABLES, FLAG_KEYS, type ConfigSources } from './load-config.js'
export { ConfigError, type ConfigIssue } from './config-error.js'
