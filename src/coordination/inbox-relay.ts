// The owner's side of the shared webhook inbox (docs/sharding.md, Webhooks): one LISTEN connection
// per replica, whatever the number of accounts. A notification for an owned account, a sweep every
// few seconds (a missed notification, a dropped connection) and a takeover each move the account's
// waiting deliveries into its local inbox, then mark them taken under the lease's epoch. A crash
// between the two moves them again, and the local inbox keeps a delivery id once.
import type pg from 'pg'
import type { Clock } from '../model/clock.js'
import { quoteIdentifier } from '../model/sql-names.js'
import type { CoordinationTables, Queryable } from './coordination-schema.js'
import type { ReplicaIdentity } from './membership.js'
import { accountsWithPending, markTaken, pendingDeliveries, pruneTaken, type PendingDelivery } from './shared-inbox.js'
import type { WebhookTables } from './webhook-schema.js'

export interface InboxRelayOptions {
  /** Single statements (a pg.Pool). */
  db: Queryable
  /** Opens the relay's own connection, kept for LISTEN (never a pooled one). */
  connect: () => Promise<pg.Client>
  coordination: CoordinationTables
  tables: WebhookTables
  me: ReplicaIdentity
  /** The epoch this replica may act on the account with (Coordinator.validEpoch); undefined: not ours. */
  epochOf: (accountId: string) => number | undefined
  /**
   * Puts the deliveries into the account's local inbox (WebhookInbox.enqueue, duplicates included)
   * and resolves once they are durable there; rejects otherwise (they stay waiting).
   */
  deliver: (accountId: string, deliveries: readonly PendingDelivery[]) => Promise<void>
  /** A NOTIFY on the secrets channel: the owner published the account's secrets again. */
  onSecretsChanged?: (accountId: string) => void
  /** A NOTIFY on the leases channel: the named replica released leases (Coordinator.poke). */
  onLeasesReleased?: (replica: string) => void
  onError: (err: unknown, accountId?: string) => void
  clock: Clock
  /** The safety net's period (default 3 s); also the wait before reconnecting. */
  sweepMs?: number
  /** At a takeover, deliveries an earlier owner took this recently are moved again (default 10 min). */
  replayMs?: number
  batch?: number
  /** Taken deliveries are removed this long after (default 24 h, at least replayMs), checked hourly. */
  keepTakenMs?: number
}

interface Drain {
  running: Promise<number>
  again: boolean
}

export class InboxRelay {
  readonly #o: InboxRelayOptions
  readonly #drains = new Map<string, Drain>()
  #client: pg.Client | undefined
  #closed = false
  #cancelSweep: () => void = () => undefined
  #prunedAt: number | undefined

  constructor(options: InboxRelayOptions) {
    this.#o = options
  }

  /** Connects and listens, then sweeps once and every sweepMs. Throws when the first connection fails. */
  async start(): Promise<void> {
    await this.#listen()
    this.#scheduleSweep(0)
  }

  /**
   * How old a restored copy may be for the replay to bring every delivery it may miss: half the
   * replay window, the rest a margin for a delivery taken before the copy but applied after it, the
   * time from the acquire to the replay, and the replicas' clocks (docs/sharding.md, Why it ends exact).
   */
  get replayCoversMs(): number {
    return (this.#o.replayMs ?? 600_000) / 2
  }

  /** The account was just acquired at `epoch`: moves its waiting deliveries and replays the recent ones. */
  takeOver(accountId: string, epoch: number): Promise<number> {
    return this.#drain(accountId, { beforeEpoch: epoch, withinMs: this.#o.replayMs ?? 600_000 })
  }

  /** Moves the account's waiting deliveries now, if it is ours; resolves with how many were marked. */
  drain(accountId: string): Promise<number> {
    return this.#drain(accountId, undefined)
  }

  /** One pass of the safety net: every owned account with deliveries waiting; hourly, the old taken rows go. */
  async sweep(): Promise<void> {
    const now = this.#o.clock.now()
    if (this.#prunedAt === undefined || now - this.#prunedAt >= 3_600_000) {
      this.#prunedAt = now
      const replayMs = this.#o.replayMs ?? 600_000
      await pruneTaken(this.#o.db, this.#o.tables, Math.max(replayMs, this.#o.keepTakenMs ?? 86_400_000))
    }
    const accounts = (await accountsWithPending(this.#o.db, this.#o.tables)).filter((a) => this.#o.epochOf(a) !== undefined)
    await Promise.all(accounts.map((a) => this.drain(a).catch((err: unknown) => this.#o.onError(err, a))))
  }

  async stop(): Promise<void> {
    this.#closed = true
    this.#cancelSweep()
    const client = this.#client
    this.#client = undefined
    await Promise.all([...this.#drains.values()].map((d) => d.running.catch(() => 0)))
    await client?.end().catch(() => undefined)
  }

  #drain(accountId: string, replay: { beforeEpoch: number; withinMs: number } | undefined): Promise<number> {
    const current = this.#drains.get(accountId)
    // One drain per account at a time; what arrives meanwhile is read by one more pass after it.
    if (current !== undefined && replay === undefined) {
      current.again = true
      return current.running
    }
    const d: Drain = { running: Promise.resolve(0), again: false }
    const run = async (): Promise<number> => {
      if (current !== undefined) await current.running.catch(() => 0)
      let marked = await this.#move(accountId, replay)
      while (d.again && !this.#closed) {
        d.again = false
        marked += await this.#move(accountId, undefined)
      }
      return marked
    }
    d.running = run().finally(() => {
      if (this.#drains.get(accountId) === d) this.#drains.delete(accountId)
    })
    this.#drains.set(accountId, d)
    return d.running
  }

  async #move(accountId: string, replay: { beforeEpoch: number; withinMs: number } | undefined): Promise<number> {
    const { db, coordination: c, tables: t, me } = this.#o
    const batch = this.#o.batch ?? 500
    const epoch = this.#o.epochOf(accountId)
    if (epoch === undefined) return 0
    let marked = 0
    for (;;) {
      const rows = await pendingDeliveries(db, t, accountId, batch, replay)
      if (rows.length === 0) return marked
      await this.#o.deliver(accountId, rows)
      // Lost meanwhile: the rows stay waiting for the new owner (who also replays what we marked).
      if (this.#o.epochOf(accountId) !== epoch) return marked
      const n = await markTaken(
        db,
        c,
        t,
        me,
        accountId,
        epoch,
        rows.map((r) => r.deliveryId),
      )
      marked += n
      if (n === 0 || rows.length < batch) return marked
    }
  }

  async #listen(): Promise<void> {
    const { tables: t } = this.#o
    const client = await this.#o.connect()
    const lost = (err?: unknown) => {
      if (this.#client !== client) return
      this.#client = undefined
      client.end().catch(() => undefined)
      if (this.#closed) return
      this.#o.onError(err ?? new Error('the LISTEN connection of the webhook relay ended'))
      this.#reconnect()
    }
    client.on('error', lost)
    client.on('end', () => lost())
    client.on('notification', (msg) => {
      const accountId = msg.payload
      if (accountId === undefined) return
      if (msg.channel === t.inboxChannel) {
        if (this.#o.epochOf(accountId) !== undefined) void this.drain(accountId).catch((err: unknown) => this.#o.onError(err, accountId))
      } else if (msg.channel === t.secretsChannel) this.#o.onSecretsChanged?.(accountId)
      else if (msg.channel === t.leasesChannel) this.#o.onLeasesReleased?.(accountId)
    })
    await client.query(`LISTEN ${quoteIdentifier(t.inboxChannel)}`)
    await client.query(`LISTEN ${quoteIdentifier(t.secretsChannel)}`)
    await client.query(`LISTEN ${quoteIdentifier(t.leasesChannel)}`)
    if (this.#closed) {
      await client.end()
      return
    }
    this.#client = client
  }

  #reconnect(): void {
    this.#o.clock.setTimer(
      this.#o.sweepMs ?? 3_000,
      () => {
        if (this.#closed) return
        this.#listen()
          .then(() => this.sweep())
          .catch((err: unknown) => {
            this.#o.onError(err)
            if (this.#client === undefined) this.#reconnect()
          })
      },
      { background: true },
    )
  }

  #scheduleSweep(ms: number): void {
    if (this.#closed) return
    this.#cancelSweep = this.#o.clock.setTimer(
      ms,
      () => {
        void this.sweep()
          .catch((err: unknown) => this.#o.onError(err))
          .finally(() => this.#scheduleSweep(this.#o.sweepMs ?? 3_000))
      },
      { background: true },
    )
  }
}
