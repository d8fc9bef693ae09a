// What the units of one account's replicator share (postgres-destination.ts builds it): its resolved
// options, its tables, connections and health, and what it knows of the replica's state row (its
// position), which the load (replica-load.ts), the batches (replica-batches.ts) and the identity
// checks (replica-identity.ts) read and move.
import type { Logger } from '../log/logger.js'
import type { ChangeLogConsumers, DestinationTarget } from '../store/repositories/change-log-consumers.js'
import type { Table } from './batch-plan.js'
import type { DestinationHealth } from './destination-health.js'
import type { PostgresDestinationOptions } from './destination-options.js'
import type { ReplicaConnections } from './replica-connections.js'
import type { WrittenState } from './replica-state.js'

/** The options with their defaults filled in (the pool and the sharding fence kept apart). */
export type ResolvedOptions = Required<Omit<PostgresDestinationOptions, 'pool' | 'fence' | 'epoch'>>

/** What the replicator knows of the replica, as last read from or written to its state row. */
export interface ReplicaPosition {
  /** The last change applied (null: not read yet). */
  cursor: number | null
  /** What the state row says was last written besides the cursor (replica-state.ts). */
  written: WrittenState
  /** When the replica was last loaded from a snapshot (its state row's loaded_at). */
  loadedAt: string | undefined
  /** The mirror's identity (mirror-identity.ts), read once. */
  mirrorId: string | undefined
  /** The progress of the takeover state the state row holds (takeoverProgress). */
  syncStateWritten: string | undefined
  /** Changes the mirror pruned through, as far as the replica was told. */
  prunedThrough: number
  /** Why the replica must be loaded: the schema's setup created a table or column of it. Cleared by a load. */
  schemaReload: string | null
  /** When every table without change_log entries was last compared, and whether the next batch must. */
  lastSnapshotCheck: number
  forceSnapshotCheck: boolean
}

export interface ReplicaContext {
  readonly options: ResolvedOptions
  readonly fence: PostgresDestinationOptions['fence']
  readonly epoch: number | undefined
  readonly log: Logger
  readonly tables: Table[]
  readonly byName: Map<string, Table>
  readonly tablesHash: string
  readonly consumers: ChangeLogConsumers
  readonly consumerName: string
  readonly conn: ReplicaConnections
  readonly health: DestinationHealth
  readonly where: DestinationTarget
  readonly onNotInstant: () => void
  readonly position: ReplicaPosition
}
