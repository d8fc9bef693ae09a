export { ConfigSchema, STREAM_NAMES, StreamName, type Config, type ConfigInput, type CoreStreamName } from './schema.js'
export { loadConfig, ENV_KEYS, FLAG_KEYS, type ConfigSources } from './load-config.js'
export { ConfigError, type ConfigIssue } from './config-error.js'
