// The destination layer: what the daemon and the CLI use to run the Postgres replica.
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { Mirror } from '../store/mirror-database.js'
import { destinationTables } from './destination-tables.js'
import { PostgresDestination, type PostgresDestinationOptions } from './postgres-destination.js'

export { PostgresDestination, type CatchUpSummary, type DestinationStatus } from './postgres-destination.js'
export { POSTGRES_CONSUMER, destinationConsumerName } from './consumer-name.js'
export { DestinationError } from './postgres-errors.js'
export { destinationTables } from './destination-tables.js'

/** The configured Postgres destination on this mirror, or undefined when none is configured (no URL). */
export function createPostgresDestination(
  config: Config,
  mirror: Mirror,
  logger: Logger,
  clock: Clock,
  options: Partial<Pick<PostgresDestinationOptions, 'batchSize' | 'pollMs' | 'retry' | 'waitReportMs'>> = {},
): PostgresDestination | undefined {
  const { url, schema, lockTimeoutSeconds, statementTimeoutSeconds } = config.destination.postgres
  if (url === undefined) return undefined
  return new PostgresDestination({
    url,
    schema,
    limits: { lockTimeoutMs: lockTimeoutSeconds * 1000, statementTimeoutMs: statementTimeoutSeconds * 1000 },
    mirrorPath: mirror.path,
    mirror: mirror.sqlite,
    tables: destinationTables(),
    logger,
    clock,
    ...options,
  })
}
