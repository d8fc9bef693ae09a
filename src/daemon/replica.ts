// One replica of a sharded `fsm-sync run` (docs/sharding.md): the Coordinator, over the destination's
// Postgres server, says which accounts of the list run here. Each lease acquired adds that account's
// runtime, its governor seeded with the previous owner's last minute and both its governor and its
// destination fenced by the lease's epoch; each loss or handover removes it at once; a graceful
// stop stops the runtimes first, then hands every lease over.
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import type { AccountConfig, Config } from '../config/index.js'
import { ensureCoordinationSchema } from '../coordination/coordination-schema.js'
import { Coordinator } from '../coordination/coordinator.js'
import { seedStarts } from '../coordination/handover-budget.js'
import { assertLease } from '../coordination/leases.js'
import type { StartsRecord } from '../coordination/request-starts.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { AccountSet } from './account-set.js'

/** The governor's window, over which a new owner counts the old owner's starts. */
const WINDOW_MS = 60_000

export interface ReplicaOptions {
  /** The top-level configuration: `sharding` and `destination.postgres.url` (required). */
  config: Config
  set: AccountSet
  /** The accounts list as last applied: what the replicas share. */
  accounts: () => readonly AccountConfig[]
  logger: Logger
  clock: Clock
}

export interface Replica {
  /** `sharding.replicaName` (FSM_REPLICA_NAME), else the host name. */
  name: string
  /** The accounts whose lease this replica holds and may act on now. */
  owned(): string[]
  /** Stops the owned accounts' runtimes, then releases their leases at once and leaves. */
  stop(): Promise<void>
}

/** The replica's name: the setting, else the host name (a StatefulSet pod's name). */
export function replicaName(config: Config): string {
  return config.sharding.replicaName ?? hostname()
}

export async function startReplica(o: ReplicaOptions): Promise<Replica> {
  const { config, set, clock } = o
  const url = config.destination.postgres.url
  if (!config.sharding.enabled || url === undefined) throw new Error('sharding needs sharding.enabled and destination.postgres.url')
  const name = replicaName(config)
  const logger = o.logger.child({ replica: name })
  const ttlMs = config.sharding.leaseSeconds * 1000
  // Single statements only; a statement that hangs fails within one lease, so a heartbeat never
  // waits longer than the leases it renews.
  const pool = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: ttlMs,
    query_timeout: ttlMs,
    keepAlive: true,
    application_name: `fsm-sync replica ${name}`,
  })
  pool.on('error', (err) =>
    logger.warn({ error: err.message }, 'a coordination connection failed while idle; the next statement opens another'),
  )
  let tables
  try {
    const client = await pool.connect()
    try {
      tables = await ensureCoordinationSchema(client)
    } finally {
      client.release()
    }
  } catch (err) {
    await pool.end().catch(() => undefined)
    throw new Error(`sharding: cannot reach the coordination tables in the destination's Postgres server: ${(err as Error).message}`, {
      cause: err,
    })
  }

  // Each account's request starts under its current lease, on the daemon's clock.
  const starts = new Map<string, { epoch: number; at: number[] }>()
  const recent = (at: number[], now: number) => {
    while (at.length > 0 && at[0]! <= now - WINDOW_MS) at.shift()
    return at
  }
  const coordinator = new Coordinator({
    db: pool,
    tables,
    me: { name, incarnation: randomUUID() },
    accounts: () => o.accounts().map((a) => a.id),
    ttlMs,
    windowMs: WINDOW_MS,
    onAcquired: (lease, prior) => {
      const account = o.accounts().find((a) => a.id === lease.accountId)
      if (account === undefined) return
      const at: number[] = []
      starts.set(lease.accountId, { epoch: lease.epoch, at })
      const priorStarts = seedStarts(clock.now(), prior, { limitPerMinute: account.config.rateLimit, windowMs: WINDOW_MS })
      logger.info({ account: account.id, epoch: lease.epoch, priorStarts: priorStarts.length }, 'account acquired: it runs on this replica')
      // Not awaited: the heartbeat goes on while the mirror opens (the set runs its changes in turn,
      // so a stop of this account waits for this open).
      const { accountId, epoch } = lease
      const held = () => coordinator.validEpoch(accountId) === epoch
      void set.adopt(
        account,
        {
          lease: {
            priorStarts,
            onStart: (t) => void recent(at, t).push(t),
            // The epoch, not only a lease: a runtime of epoch 3 must not act for epoch 4.
            permit: held,
            fence: (client) => assertLease(client, tables, accountId, name, epoch),
          },
        },
        held,
      )
    },
    onStop: async (accountId, reason) => {
      logger.info({ account: accountId, reason }, 'account leaves this replica: its runtime stops')
      await set.remove(accountId)
    },
    starts: (held) => {
      const now = clock.now()
      return held.flatMap((l): StartsRecord[] => {
        const s = starts.get(l.accountId)
        if (s?.epoch !== l.epoch) return []
        return [{ accountId: l.accountId, epoch: l.epoch, agesMs: recent(s.at, now).map((t) => now - t) }]
      })
    },
  })
  try {
    await coordinator.register()
  } catch (err) {
    await pool.end().catch(() => undefined)
    throw err
  }
  coordinator.start(clock, (err) =>
    logger.warn({ error: (err as Error).message }, 'a coordination heartbeat failed; accounts stop when their lease runs out here'),
  )
  logger.info({ leaseSeconds: config.sharding.leaseSeconds, accounts: o.accounts().length }, 'replica registered: sharing the accounts')

  let stopped: Promise<void> | undefined
  return {
    name,
    owned: () => coordinator.owned(),
    stop: () =>
      (stopped ??= (async () => {
        try {
          await coordinator.stop()
          logger.info('the leases are released: the other replicas take the accounts over now')
        } catch (err) {
          logger.warn(
            { error: (err as Error).message },
            'the leases could not be released: the other replicas take them over once they run out',
          )
        } finally {
          await pool.end().catch(() => undefined)
        }
      })()),
  }
}
