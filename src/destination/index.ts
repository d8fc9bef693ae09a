// The destination layer: what the daemon and the CLI use to run the Postgres replica. One pool of
// connections for the process (createDestinationPool), one destination per account sharing it.
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { Mirror } from '../store/sqlite/mirror-database.js'
import { DestinationPool } from './destination-pool.js'
import { destinationTables } from './destination-tables.js'
import { PostgresDestination, type PostgresDestinationOptions } from './postgres-destination.js'
import type { SessionLimits } from './postgres-session.js'
import { DEFAULT_ACCOUNT } from './postgres-upgrade.js'

export { PostgresDestination, type CatchUpSummary, type DestinationStatus } from './postgres-destination.js'
export { POSTGRES_CONSUMER, destinationConsumerName } from './consumer-name.js'
export { DestinationError } from './postgres-errors.js'
export { destinationTables } from './destination-tables.js'
export { DestinationPool } from './destination-pool.js'
export type { Fence } from './destination-options.js'

type PostgresSettings = Config['destination']['postgres']

function sessionLimits(settings: PostgresSettings): SessionLimits {
  return { lockTimeoutMs: settings.lockTimeoutSeconds * 1000, statementTimeoutMs: settings.statementTimeoutSeconds * 1000 }
}

/**
 * The process's Postgres connections (at most destination.postgres.maxConnections), for every
 * account's destination to share; undefined when no destination is configured. End it after them.
 */
export function createDestinationPool(settings: PostgresSettings, clock: Clock): DestinationPool | undefined {
  if (settings.url === undefined) return undefined
  return new DestinationPool({ url: settings.url, limits: sessionLimits(settings), clock, maxConnections: settings.maxConnections })
}

/**
 * The configured Postgres destination of one account's mirror, or undefined when none is configured
 * (no URL). Without a pool it has one of its own (one connection), ended with it.
 */
export function createPostgresDestination(
  config: Config,
  mirror: Mirror,
  logger: Logger,
  clock: Clock,
  options: Partial<
    Pick<PostgresDestinationOptions, 'batchSize' | 'pollMs' | 'retry' | 'waitReportMs' | 'accountId' | 'pool' | 'fence'>
  > = {},
): PostgresDestination | undefined {
  const settings = config.destination.postgres
  if (settings.url === undefined) return undefined
  return new PostgresDestination({
    url: settings.url,
    schema: settings.schema,
    limits: sessionLimits(settings),
    mirrorPath: mirror.path,
    mirror: mirror.sqlite,
    tables: destinationTables(),
    logger,
    clock,
    accountId: DEFAULT_ACCOUNT,
    ...options,
  })
}
