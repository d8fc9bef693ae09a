// The names a Postgres destination registers under in change_log_consumers. Apart from the modules
// that load pg, so that `fsm-sync status` can name the configured destination without loading it.
import { createHash } from 'node:crypto'
import { describeTarget } from './postgres-errors.js'

/** The destination's row in its own _fsm_sync_state, and the consumer name of releases before destinationConsumerName. */
export const POSTGRES_CONSUMER = 'postgres'

/**
 * The name a destination registers under in change_log_consumers: one per target (host, port,
 * database, schema), so two destinations each hold retention back for themselves. It never holds
 * the URL's user or password. A target with characters a consumer name cannot hold, or too long,
 * gets them replaced and a short hash of the exact target.
 */
export function destinationConsumerName(url: string, schema: string): string {
  const target = `${describeTarget(url)}/${schema}`
  const plain = `postgres:${target.replace(/\//g, ':')}`
  const safe = plain.replace(/[^A-Za-z0-9_.:-]/g, '_')
  if (safe === plain && safe.length <= 64) return safe
  const suffix = `-${createHash('sha256').update(target).digest('hex').slice(0, 8)}`
  return safe.slice(0, 64 - suffix.length) + suffix
}
