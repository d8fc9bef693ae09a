// The destination layer: what the daemon and the CLI use to run the Postgres replica. One pool of
// connections for the process (createDestinationPool), one destination per account sharing it.
import pg from 'pg'
import type { Config } from '../config/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { Mirror, Sqlite } from '../store/sqlite/mirror-database.js'
import type { Fence } from './destination-options.js'
import { DestinationPool } from './destination-pool.js'
import { destinationTables } from './destination-tables.js'
import { PostgresDestination, type PostgresDestinationOptions } from './postgres-destination.js'
import type { SessionLimits } from './postgres-session.js'
import { DEFAULT_ACCOUNT } from './postgres-upgrade.js'
import { restoreFromWarehouse, type RestoreOutcome } from './postgres-restore.js'

export { PostgresDestination, type CatchUpSummary, type DestinationStatus } from './postgres-destination.js'
export { POSTGRES_CONSUMER, destinationConsumerName } from './consumer-name.js'
export { DestinationError } from './postgres-errors.js'
export { destinationTables } from './destination-tables.js'
export { DestinationPool } from './destination-pool.js'
export type { Fence } from './destination-options.js'
export type { RestoreOutcome } from './postgres-restore.js'

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
    Pick<PostgresDestinationOptions, 'batchSize' | 'pollMs' | 'retry' | 'waitReportMs' | 'accountId' | 'pool' | 'fence' | 'epoch'>
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

/**
 * A new owner's takeover (sharding): rebuilds the account's mirror from the warehouse's copy when it
 * is the better one (postgres-restore.ts), on a connection of its own, closed after.
 */
export async function restoreAccountFromWarehouse(
  config: Config,
  mirror: Sqlite,
  o: { accountId: string; fence: Fence; epoch: number; clock: Clock },
): Promise<RestoreOutcome> {
  const settings = config.destination.postgres
  if (settings.url === undefined) return { source: 'none', reason: 'no destination is configured' }
  const limits = sessionLimits(settings)
  const client = new pg.Client({
    connectionString: settings.url,
    keepAlive: true,
    statement_timeout: limits.statementTimeoutMs,
    lock_timeout: limits.lockTimeoutMs,
    application_name: `fsm-sync takeover ${o.accountId}`,
  })
  await client.connect()
  try {
    return await restoreFromWarehouse({
      client,
      schema: settings.schema,
      accountId: o.accountId,
      mirror,
      tables: destinationTables(),
      fence: o.fence,
      epoch: o.epoch,
      now: () => new Date(o.clock.now()).toISOString(),
    })
  } finally {
    await client.end().catch(() => undefined)
  }
}
