// What a Postgres destination is given (its options) and what it reports (its status, a catch-up's
// summary); the name it registers under in change_log_consumers is in consumer-name.ts.
import type pg from 'pg'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { TableSpec } from '../model/table-spec.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import type { SessionLimits } from './postgres-session.js'
import type { DestinationPool } from './destination-pool.js'

export interface PostgresDestinationOptions {
  url: string
  schema: string
  /** The account whose mirror this is: its rows in the schema carry it (account_id). Default `default`. */
  accountId?: string
  /** The process's Postgres connections, shared by every account's destination; none: a pool of one of its own. */
  pool?: DestinationPool
  /** The mirror file; the destination opens its own read-only connection to it. */
  mirrorPath: string
  /** The mirror's writer connection, for the consumer's bookkeeping (change_log_consumers). */
  mirror: Sqlite
  /** Every table to replicate, change_log included (destinationTables()). */
  tables: readonly TableSpec[]
  logger: Logger
  /** The process's clock: lag, timestamps, polling and back-off run on it. */
  clock: Clock
  /** Changes per Postgres transaction. */
  batchSize?: number
  /** How often an idle destination looks for new changes. */
  pollMs?: number
  /** How often tables without change_log entries are compared with the replica. */
  snapshotCheckMs?: number
  /** Back-off after a failure: from minMs, doubling, up to maxMs. */
  retry?: { minMs: number; maxMs: number }
  /** Postgres lock_timeout and statement_timeout of the destination's session. */
  limits?: SessionLimits
  /** How long a statement may wait on Postgres before the wait is reported, with who holds the lock. */
  waitReportMs?: number
  /**
   * The fencing check (docs/sharding.md, Wiring): run in every transaction that writes this
   * account's rows, cursor or state, as its last statement before COMMIT (so the lease row is locked
   * only for the commit). An error whose `code` is `LEASE_LOST` means
   * another replica owns the account now: the transaction rolls back and the destination stops for
   * good (a new owner, a new destination). Any other error is a failure like any statement's.
   */
  fence?: Fence
  /**
   * The lease epoch this destination writes under (sharding, with `fence`). A replica another mirror
   * feeds is replaced (loaded from this mirror) when that mirror was recorded under a lower epoch:
   * the account's earlier owner. Without it, another mirror is refused (`identity`).
   */
  epoch?: number
}

/** Checks, inside the caller's transaction, that this replica still owns the account; throws when not. */
export type Fence = (client: pg.ClientBase) => Promise<void>

/** The fence refused: another replica owns the account (coordination's LeaseLost carries this code). */
export function leaseLost(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'LEASE_LOST'
}

export interface DestinationStatus {
  /** `following` once loaded and applying changes; `error` while failing, `waiting` while Postgres keeps a statement waiting (see lastError). */
  state: 'starting' | 'loading' | 'following' | 'waiting' | 'error' | 'stopped'
  cursor: number | null
  lagChanges: number
  lagSeconds: number
  lastError: string | null
  lastErrorAt: string | null
  rowsReplicated: number
  changesApplied: number
  errors: number
  loads: number
  /** Time values written as NULL: not an instant timestamptz can hold (text upstream sent, year 0000). */
  timesNulled: number
}

export interface CatchUpSummary {
  /** Whether the destination was loaded from a snapshot, and why. */
  loaded: string | null
  loadedRows: number
  changesApplied: number
  rowsWritten: number
  cursor: number
  durationMs: number
}
