// One replica of a sharded `fsm-sync run` (docs/sharding.md): the Coordinator, over the destination's
// Postgres server, says which accounts of the list run here. Each lease acquired adds that account's
// runtime, its governor seeded with the previous owner's last minute and both its governor and its
// destination fenced by the lease's epoch; each loss or handover removes it at once; a graceful
// stop stops the runtimes first, then hands every lease over. A delivery for a listed account (held
// here or elsewhere) is verified with the shared secrets and stored in the shared inbox; the owner's relay
// moves it into the account's local inbox (docs/sharding.md, Webhooks).
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import type { Registry } from 'prom-client'
import type { AccountConfig, Config } from '../config/index.js'
import { ensureCoordinationSchema } from '../coordination/coordination-schema.js'
import { Coordinator } from '../coordination/coordinator.js'
import { seedStarts } from '../coordination/handover-budget.js'
import { InboxRelay } from '../coordination/inbox-relay.js'
import { assertLease } from '../coordination/leases.js'
import type { StartsRecord } from '../coordination/request-starts.js'
import { SecretsKey } from '../coordination/secrets-key.js'
import { storeDelivery } from '../coordination/shared-inbox.js'
import { SharedSecrets } from '../coordination/shared-secrets.js'
import { ensureWebhookSchema } from '../coordination/webhook-schema.js'
import { restoreAccountFromWarehouse, type Fence } from '../destination/index.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import type { BodyBudget } from '../webhooks/body-budget.js'
import { createIntakeHandler, type IntakeHandler } from '../webhooks/intake-handler.js'
import { activeSecretsOf } from '../webhooks/secret-store.js'
import type { AccountSet } from './account-set.js'
import { ReplicaMetrics } from './replica-metrics.js'

/** The governor's window, over which a new owner counts the old owner's starts. */
const WINDOW_MS = 60_000
/** How often the owner publishes its accounts' secrets files again when they changed (a `webhooks register`). */
const PUBLISH_MS = 5_000

export interface ReplicaOptions {
  /** The top-level configuration: `sharding` and `destination.postgres.url` (required). */
  config: Config
  set: AccountSet
  /** The accounts list as last applied: what the replicas share. */
  accounts: () => readonly AccountConfig[]
  logger: Logger
  clock: Clock
  /** The process's webhook body budget, which the intake for accounts held elsewhere draws on too. */
  bodyBudget?: BodyBudget
  /** The process's registry, which the replica's series join (replica-metrics.ts). */
  registry?: Registry
}

export interface Replica {
  /** `sharding.replicaName` (FSM_REPLICA_NAME), else the host name. */
  name: string
  /** The accounts whose lease this replica holds and may act on now. */
  owned(): string[]
  /**
   * The intake of a listed account, held here or elsewhere: verified with the secrets its owner
   * published (and this replica's own file), stored in the shared inbox, 200 once committed; the
   * owner's relay moves it into its local inbox. Undefined when the account is not listed.
   */
  intake(accountId: string): IntakeHandler | undefined
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
  let tables, w
  try {
    const client = await pool.connect()
    try {
      tables = await ensureCoordinationSchema(client)
      const ensured = await ensureWebhookSchema(client)
      w = ensured.tables
      if (ensured.revoked.length > 0)
        logger.warn(
          { roles: ensured.revoked },
          'privileges of other roles on the shared webhook tables were revoked: only this role reads them',
        )
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
  const key = SecretsKey.fromVariable(config.sharding.secretsKey)
  const shared = new SharedSecrets({ db: pool, tables: w, key, clock })
  const me = { name, incarnation: randomUUID() }
  const warn = (what: string) => (err: unknown, accountId?: string) =>
    logger.warn({ error: (err as Error).message, ...(accountId === undefined ? {} : { account: accountId }) }, what)
  // The owner's secrets files, published when they changed since (publish() skips the unchanged).
  const publish = (accountId: string) => {
    const rt = set.runtimes.get(accountId)
    if (rt === undefined || coordinator.validEpoch(accountId) === undefined) return Promise.resolve(false)
    return shared.publish(accountId, rt.webhooks.secrets.entries())
  }
  const coordinator: Coordinator = new Coordinator({
    db: pool,
    tables,
    me,
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
      const fence: Fence = (client) => assertLease(client, tables, accountId, name, epoch)
      const adopted = set.adopt(
        account,
        {
          lease: {
            priorStarts,
            onStart: (t) => void recent(at, t).push(t),
            // The epoch, not only a lease: a runtime of epoch 3 must not act for epoch 4.
            permit: held,
            fence,
            epoch,
            replayCoversMs: relay.replayCoversMs,
            // Its mirror from the warehouse's copy when that is the better one (docs/sharding.md, Takeover).
            restore: async (mirror) => {
              const started = clock.now()
              try {
                const r = await restoreAccountFromWarehouse(config, mirror, { accountId, fence, epoch, clock })
                const took = { durationMs: Math.round(clock.now() - started), reason: r.reason }
                if (r.source === 'warehouse') {
                  logger.info(
                    { account: accountId, ...took, rows: r.rows, seq: r.seq, adopted: r.adopted },
                    'takeover: the mirror is restored from the warehouse',
                  )
                } else
                  logger.info({ account: accountId, ...took, source: r.source }, 'takeover: the mirror is not restored from the warehouse')
                return r.source === 'warehouse'
              } catch (err) {
                warn('takeover: restoring the mirror from the warehouse failed; the account goes on from its own mirror')(err, accountId)
                return false
              }
            },
          },
        },
        held,
      )
      metrics?.sweeping(accountId, adopted.then(() => set.runtimes.get(accountId)?.firstSweep).then(held))
      // Once its runtime runs: its secrets for the other replicas, then the deliveries they stored.
      void adopted
        .then(async () => {
          if (!held() || !set.runtimes.has(accountId)) return
          await publish(accountId)
          // Without the replay, only a reconciliation finds the deletions the copy missed.
          await relay.takeOver(accountId, epoch).catch((err: unknown) => {
            void set.runtimes.get(accountId)?.scheduler.runNow('reconcile')
            throw err
          })
        })
        .catch(warn('the takeover of the shared webhook inbox failed; its sweep moves the deliveries later'))
    },
    onStop: async (accountId, reason) => {
      logger.info({ account: accountId, reason }, 'account leaves this replica: its runtime stops')
      shared.forgetPublished(accountId)
      await set.remove(accountId)
    },
    onTakeover: (lease, vacantMs) => metrics?.takenOver(lease.accountId, vacantMs),
    releaseChannel: w.leasesChannel,
    starts: (held) => {
      const now = clock.now()
      return held.flatMap((l): StartsRecord[] => {
        const s = starts.get(l.accountId)
        if (s?.epoch !== l.epoch) return []
        return [{ accountId: l.accountId, epoch: l.epoch, agesMs: recent(s.at, now).map((t) => now - t) }]
      })
    },
  })
  const metrics =
    o.registry &&
    new ReplicaMetrics(o.registry, {
      replica: name,
      stats: coordinator.stats,
      owned: () => coordinator.owned().length,
      now: () => clock.now(),
    })
  const relay = new InboxRelay({
    db: pool,
    connect: async () => {
      const client = new pg.Client({ connectionString: url, keepAlive: true, application_name: `fsm-sync relay ${name}` })
      await client.connect()
      return client
    },
    coordination: tables,
    tables: w,
    me,
    clock,
    // Not before its runtime runs: the takeover moves what waited meanwhile.
    epochOf: (a) => (set.runtimes.has(a) ? coordinator.validEpoch(a) : undefined),
    onSecretsChanged: (a) => shared.invalidate(a),
    // Another replica released leases: take what the assignment gives this one now, not at the next heartbeat.
    onLeasesReleased: (by) => by !== name && coordinator.poke(),
    onError: warn('moving deliveries from the shared webhook inbox failed; the next sweep tries again'),
    deliver: async (a, rows) => {
      const rt = set.runtimes.get(a)
      if (rt === undefined) throw new Error(`account ${a} is not running here yet`)
      await Promise.all(rows.map((d) => rt.webhooks.inbox.enqueue(d)))
    },
  })
  try {
    // Registered first: the others see this replica before they take its share of the accounts.
    await coordinator.register()
    await relay.start()
  } catch (err) {
    await relay.stop()
    await coordinator.stop().catch(() => undefined)
    await pool.end().catch(() => undefined)
    throw err
  }
  let cancelPublish: () => void = () => undefined
  const republish = () => {
    cancelPublish = clock.setTimer(
      PUBLISH_MS,
      () => {
        void Promise.all(coordinator.owned().map((a) => publish(a).catch(warn('publishing the webhook secrets failed')))).finally(republish)
      },
      { background: true },
    )
  }
  republish()
  const intakes = new Map<string, { config: AccountConfig['config']; handler: IntakeHandler }>()
  const intake = (accountId: string): IntakeHandler | undefined => {
    const account = o.accounts().find((a) => a.id === accountId)
    if (account === undefined) return undefined
    const kept = intakes.get(accountId)
    if (kept?.config === account.config) return kept.handler
    const c = account.config
    const graceH = c.webhooks.rotationGraceHours
    const local = () => set.runtimes.get(accountId)?.webhooks.secrets.active(clock.now(), graceH) ?? []
    const env = c.webhookSecrets.map((secret, i) => ({ secret, label: `FSM_WEBHOOK_SECRETS#${i}` }))
    const handler = createIntakeHandler({
      inbox: { enqueue: (d) => storeDelivery(pool, w, accountId, d) },
      // The owner's own file too: a `webhooks register` here verifies before its next publish.
      secrets: () => [...env, ...local(), ...activeSecretsOf(shared.cached(accountId), clock.now(), graceH)],
      refreshSecrets: async () => [...env, ...local(), ...activeSecretsOf(await shared.refresh(accountId), clock.now(), graceH)],
      maxBodyBytes: c.webhooks.maxBodyBytes,
      bodyTimeoutMs: c.webhooks.bodyTimeoutMs,
      maxBufferedBytes: c.webhooks.maxBufferedBytes,
      ...(o.bodyBudget === undefined ? {} : { budget: o.bodyBudget }),
      logger: logger.child({ account: accountId, sharedInbox: true }),
      now: () => clock.now(),
    })
    intakes.set(accountId, { config: account.config, handler })
    return handler
  }
  coordinator.start(clock, (err) =>
    logger.warn({ error: (err as Error).message }, 'a coordination heartbeat failed; accounts stop when their lease runs out here'),
  )
  logger.info({ leaseSeconds: config.sharding.leaseSeconds, accounts: o.accounts().length }, 'replica registered: sharing the accounts')

  let stopped: Promise<void> | undefined
  return {
    name,
    owned: () => coordinator.owned(),
    intake,
    stop: () =>
      (stopped ??= (async () => {
        cancelPublish()
        await relay.stop()
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
