// Applies inbox rows in receipt order, after the ack (design.md, Webhooks: store first, answer
// second, apply third). Rows are applied in short time slices, each one transaction that also marks
// the rows applied. A row that cannot be applied rolls back alone and is kept with its error: it is
// counted, shown by `status`, and never picked up again. Rows a crash left unapplied are applied at
// start.
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'
import { RECORD_STREAMS, type RecordStream } from '../../connectors/index.js'
import type { Payload } from '../../connectors/mapping.js'
import type { Logger } from '../log/logger.js'
import type { Sqlite } from '../store/mirror-database.js'
import { DeliveryApplier, OBJECTS_DEFERRED, type ApplyOutcome, type ObjectSink } from './delivery-applier.js'
import { FollowUps, type FollowUpClient } from './follow-ups.js'
import type { InboxRow, WebhookInbox } from './inbox.js'
import type { WebhookMetrics } from './metrics.js'

export interface WebhookProcessorOptions {
  sqlite: Sqlite
  inbox: WebhookInbox
  logger: Logger
  now: () => number
  streams?: readonly RecordStream[]
  objectSink?: ObjectSink
  /** Upstream for follow-up GETs of partial deliveries; without it none are made. */
  client?: FollowUpClient
  metrics?: WebhookMetrics
  /** Rows read per batch. Default 100. */
  batchSize?: number
  /**
   * Time the processor may hold the event loop per turn (ms, default 2). The intake shares the
   * loop: under a burst, acks stay fast and the backlog is applied as the load allows.
   */
  sliceMs?: number
  /** Wait before trying again after the store itself failed (not a row). Default 5 s. */
  storeRetryMs?: number
  /**
   * Wait between a wake and the slice it starts (ms, default 5). Each group commit of the inbox
   * wakes the processor; gathering a few milliseconds of them applies a burst in fewer, larger
   * transactions (multi-row upserts, fewer log frames) instead of one small one per group.
   */
  gatherMs?: number
}

type Settled = { row: InboxRow; outcome: ApplyOutcome | { kind: 'failed'; error: string } }

/**
 * Most snapshots applied in one upsert call. The slice's time budget is checked between calls, so
 * this bounds how far a slice can run past it (about 60 µs a row: 1.5 ms), while keeping most of
 * the saving of one call for many rows.
 */
const MAX_RUN = 25

export class WebhookProcessor {
  readonly #o: WebhookProcessorOptions
  readonly #log: Logger
  readonly #applier: DeliveryApplier
  readonly #followUps: FollowUps | undefined
  readonly #applyBatch: (rows: readonly InboxRow[]) => Settled[]
  #running: Promise<void> | undefined
  #again = false
  #started = false
  #stopped = false
  #retryTimer: NodeJS.Timeout | undefined
  #wakeTimer: NodeJS.Timeout | undefined

  constructor(options: WebhookProcessorOptions) {
    this.#o = options
    this.#log = options.logger.child({ component: 'webhook-processor' })
    this.#applier = new DeliveryApplier(options.sqlite, options.streams ?? RECORD_STREAMS, options.objectSink)
    this.#followUps =
      options.client === undefined
        ? undefined
        : new FollowUps({ client: options.client, sqlite: options.sqlite, writer: (t) => this.#applier.writer(t), logger: this.#log, now: options.now, metrics: options.metrics })
    const applyRow = (row: InboxRow, now: string): ApplyOutcome => {
      const outcome = this.#applier.apply(row.event, decode(row), now)
      if (outcome.kind === 'applied') options.inbox.markProcessed(row.delivery_id, now)
      else options.inbox.markFailed(row.delivery_id, outcome.error)
      return outcome
    }
    const budget = options.sliceMs ?? 2
    // The fast path: rows in one transaction, no savepoints, until the time slice is spent;
    // consecutive snapshots of one stream go in one multi-row upsert. A row that throws rolls the
    // whole slice back; it is then redone row by row, each in a savepoint.
    const fast = options.sqlite.transaction((rows: readonly InboxRow[]): Settled[] => {
      const started = performance.now()
      const out: Settled[] = []
      // At least one row per slice: a thread descheduled past the budget before the first check
      // would otherwise settle nothing, and the loop below needs the last settled row.
      for (let i = 0; i < rows.length && (i === 0 || performance.now() - started < budget); ) {
        const now = new Date(options.now()).toISOString()
        const run = this.#snapshotRun(rows, i)
        if (run === undefined) {
          out.push({ row: rows[i]!, outcome: applyRow(rows[i]!, now) })
          i++
          continue
        }
        const changed = this.#applier.applySnapshots(run.stream, run.payloads, now)
        rows.slice(i, i + run.payloads.length).forEach((row, k) => {
          options.inbox.markProcessed(row.delivery_id, now)
          out.push({ row, outcome: { kind: 'applied', changed: changed.has(run.payloads[k]!.id as string) } })
        })
        i += run.payloads.length
      }
      return out
    })
    const savepoint = options.sqlite.transaction(applyRow)
    const careful = options.sqlite.transaction((rows: readonly InboxRow[]): Settled[] =>
      rows.map((row): Settled => {
        const now = new Date(options.now()).toISOString()
        try {
          return { row, outcome: savepoint(row, now) }
        } catch (err) {
          const error = (err as Error).message
          options.inbox.markFailed(row.delivery_id, error)
          return { row, outcome: { kind: 'failed', error } }
        }
      }),
    )
    this.#applyBatch = (rows) => {
      try {
        return fast(rows)
      } catch {
        return careful(rows)
      }
    }
  }

  /** Applies what is waiting (a restart's leftovers included), then whatever `wake` announces. */
  start(): void {
    if (this.#started) return
    this.#started = true
    if (this.#o.objectSink !== undefined) {
      const n = this.#o.inbox.requeueErrors(OBJECTS_DEFERRED)
      if (n > 0) this.#log.info({ deliveries: n }, 'custom-object deliveries kept until an applier existed are applied now')
    }
    this.wake()
  }

  /** New rows were stored (the inbox's onStored): a slice starts after `gatherMs`. */
  wake(): void {
    if (!this.#started || this.#stopped) return
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    if (this.#wakeTimer !== undefined) return
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = undefined
      this.#run()
    }, this.#o.gatherMs ?? 5)
  }

  /** Resolves when every stored row has been settled and no follow-up GET is in flight. */
  async drained(): Promise<void> {
    for (;;) {
      while (this.#running !== undefined || this.#wakeTimer !== undefined) {
        if (this.#running !== undefined) await this.#running
        else await sleep(this.#o.gatherMs ?? 5)
      }
      await this.#followUps?.idle()
      if (this.#running === undefined && this.#wakeTimer === undefined && (this.#followUps?.pending ?? 0) === 0) return
    }
  }

  /** Finishes the batch in hand, cancels follow-ups; unapplied rows wait for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer)
    if (this.#wakeTimer !== undefined) clearTimeout(this.#wakeTimer)
    this.#wakeTimer = undefined
    await this.#running
    await this.#followUps?.stop()
  }

  #run(): void {
    if (this.#stopped) return
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#loop().finally(() => {
      this.#running = undefined
      if (this.#again) this.wake()
    })
  }

  /** The run of snapshots of one stream with distinct record ids starting at `i`, decoded. */
  #snapshotRun(rows: readonly InboxRow[], i: number): { stream: RecordStream; payloads: Payload[] } | undefined {
    const stream = this.#applier.snapshotStream(rows[i]!.event)
    if (stream === undefined) return undefined
    const ids = new Set<unknown>()
    const payloads: Payload[] = []
    for (let j = i; j < rows.length && j - i < MAX_RUN && this.#applier.snapshotStream(rows[j]!.event) === stream; j++) {
      let payload: Payload
      try {
        payload = decode(rows[j]!)
      } catch {
        break
      }
      if (typeof payload.id !== 'string' || ids.has(payload.id)) break
      ids.add(payload.id)
      payloads.push(payload)
    }
    return payloads.length < 2 ? undefined : { stream, payloads }
  }

  async #loop(): Promise<void> {
    const size = this.#o.batchSize ?? 100
    let after = 0
    // Rows read but not reached by the last slice (its time ran out): the oldest pending rows, so
    // the next slice starts with them instead of reading them (bodies included) again.
    let rest: InboxRow[] = []
    this.#again = false
    let sliceStart = performance.now()
    while (!this.#stopped) {
      const rows = rest.length > 0 ? rest : this.#o.inbox.pending(after, size)
      if (rows.length === 0) return
      let settled: Settled[]
      try {
        settled = this.#applyBatch(rows)
      } catch (err) {
        // The store failed (disk full, I/O): not a row's fault. Try again later, not in a loop.
        this.#log.error({ err }, 'applying webhook deliveries failed: trying again shortly')
        this.#retryTimer = setTimeout(() => this.wake(), this.#o.storeRetryMs ?? 5_000)
        this.#retryTimer.unref()
        return
      }
      this.#o.inbox.settled(settled.length)
      for (const { row, outcome } of settled) this.#report(row, outcome)
      after = settled[settled.length - 1]!.row.seq
      rest = rows.slice(settled.length)
      // Pace: rest as long as the slice took, so the intake keeps at least half of the loop
      // however many turns it makes; acks first, apply as the load allows.
      const spent = performance.now() - sliceStart
      await (spent >= 1 ? sleep(spent) : nextTurn())
      sliceStart = performance.now()
    }
  }

  #report(row: InboxRow, outcome: Settled['outcome']): void {
    const m = this.#o.metrics?.processor
    if (outcome.kind === 'applied') {
      if (m) m.applied++
      if (outcome.followUp !== undefined) this.#followUps?.request(outcome.followUp.stream, outcome.followUp.id)
    } else if (outcome.kind === 'deferred') {
      if (m) m.deferred++
    } else {
      if (m) m.failed++
      this.#log.warn({ deliveryId: row.delivery_id, event: row.event, error: outcome.error }, 'webhook delivery could not be applied: kept in webhook_inbox with its error')
    }
  }
}

function decode(row: InboxRow): Payload {
  // Bodies that were not valid UTF-8 are kept as bytes; they parse with replacement characters.
  const text = row.raw ?? row.raw_bytes?.toString('utf8') ?? ''
  const value: unknown = JSON.parse(text)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('the body is not a JSON object')
  return value as Payload
}
