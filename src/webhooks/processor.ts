// Applies inbox rows in receipt order, after the ack (docs/webhooks.md: store first, answer
// second, apply third). Rows are applied in short time slices, each one transaction that also marks
// the rows applied. A row that cannot be applied rolls back alone and is kept with its error: it is
// counted, shown by `status`, and never picked up again. Rows a crash left unapplied are applied at
// start. Acks come first: while deliveries arrive, slices are short and the processor yields the
// event loop to the intake (see #pace), so a burst is acknowledged at nearly the intake's own rate
// and applied once the loop has room. The pacing's rules are pure functions (pacing.ts); its
// timers are real time (they share the loop with the intake's sockets), while the back-off after
// a mirror failure and every stored time come from the injected Clock.
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'
import { RECORD_STREAMS } from '../../connectors/index.js'
import type { RecordStream } from '../model/streams.js'
import type { Payload } from '../model/rows.js'
import type { Logger } from '../log/logger.js'
import type { Clock } from '../model/clock.js'
import { fileFault, mirrorLocked } from '../store/sqlite/file-faults.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { DeliveryApplier, OBJECTS_DEFERRED_TEXTS, type ApplyOutcome, type ObjectSink } from './delivery-applier.js'
import { FollowUps, type FollowUpClient } from './follow-ups.js'
import type { InboxRow, WebhookInbox } from './inbox.js'
import type { WebhookMetrics } from './metrics.js'
import type { DeliverySelection } from './delivery-selection.js'
import { DEFAULT_GATHER_MS, maxRun, nextPace, nextRestFactor, retryDelay, sliceBudget, wakeDelay } from './pacing.js'

export interface WebhookProcessorOptions {
  sqlite: Sqlite
  inbox: WebhookInbox
  logger: Logger
  /** The process's one clock: stored times and the back-off after a mirror failure. */
  clock: Clock
  streams?: readonly RecordStream[]
  objectSink?: ObjectSink
  /** Which deliveries are applied; the others are marked skipped. Default: all. */
  selection?: DeliverySelection
  /** Upstream for follow-up GETs of partial deliveries; without it none are made. */
  client?: FollowUpClient
  metrics?: WebhookMetrics
  /** Rows read per batch. Default 100. */
  batchSize?: number
  /**
   * Time the processor may hold the event loop per turn (ms, default 2), and at most 0.5 while
   * deliveries arrive. The intake shares the loop: under a burst, acks stay fast and the backlog
   * is applied as the load allows.
   */
  sliceMs?: number
  /**
   * First wait before trying again after the mirror itself failed (disk full, corrupt pages, I/O;
   * not a row's fault), doubled at each failure up to storeRetryMaxMs. Default 1 s.
   */
  storeRetryMs?: number
  /** Longest wait between two tries while the mirror keeps failing. Default 60 s. */
  storeRetryMaxMs?: number
  /**
   * Wait between a wake and the slice it starts (ms, default 5). Each group commit of the inbox
   * wakes the processor; gathering a few milliseconds of them applies a burst in fewer, larger
   * transactions (multi-row upserts, fewer log frames) instead of one small one per group.
   */
  gatherMs?: number
  /** Resolves once deliveries acknowledged elsewhere (the intake journal) are in the inbox: drained() waits for it first. */
  relayed?: () => Promise<void>
}

type Settled = { row: InboxRow; outcome: ApplyOutcome | { kind: 'failed'; error: string } }

/** The mirror failed under the processor: applying waits, then tries again (see #backOff). */
export interface ProcessorFault {
  error: string
  /** ISO time of the first failure of this run of failures. */
  since: string
  /** Failures in a row. */
  attempts: number
  retryInMs: number
}

export class WebhookProcessor {
  readonly #options: WebhookProcessorOptions
  readonly #log: Logger
  readonly #applier: DeliveryApplier
  readonly #followUps: FollowUps | undefined
  readonly #applyBatch: (rows: readonly InboxRow[]) => Settled[]
  #running: Promise<void> | undefined
  #again = false
  #started = false
  #stopped = false
  /** Cancels the back-off's timer (on the clock) while the mirror fails. */
  #retryTimer: (() => void) | undefined
  #fault: ProcessorFault | undefined
  /** The delivery whose row holds the current fault's error (markFault), put back in line before the next try. */
  #faultRow: string | undefined
  /**
   * The deliveries an earlier process kept with a mirror fault are still to be put back in line:
   * the mirror failed at start too. Until they are, none is applied (they would be skipped and
   * later deliveries applied ahead of them).
   */
  #requeuePending = false
  #wakeTimer: NodeJS.Timeout | undefined
  #busy = false
  /** The inbox was `filling` at the last slice (logged when it changes). */
  #filling = false
  /** Ends the current rest between busy slices, if any. */
  #endRest: (() => void) | undefined
  #restFactor = 1
  /** The inbox's group commits when the last slice ended: more since means deliveries arrive. */
  #commitsSeen = 0

  constructor(options: WebhookProcessorOptions) {
    this.#options = options
    this.#log = options.logger.child({ component: 'webhook-processor' })
    this.#applier = new DeliveryApplier(options.sqlite, options.streams ?? RECORD_STREAMS, options.objectSink, options.selection)
    this.#followUps =
      options.client === undefined
        ? undefined
        : new FollowUps({
            client: options.client,
            sqlite: options.sqlite,
            writer: (t) => this.#applier.writer(t),
            logger: this.#log,
            now: () => options.clock.now(),
            metrics: options.metrics,
          })
    /** Applies one row; one deferred or skipped is marked here, an applied one by the caller. */
    const applyOne = (row: InboxRow, now: string): ApplyOutcome => {
      const outcome = this.#applier.apply(row.event, decode(row), now)
      if (outcome.kind === 'deferred') options.inbox.markFailed(row.delivery_id, outcome.error)
      else if (outcome.kind === 'skipped') options.inbox.markSkipped(row.delivery_id, outcome.reason, now)
      return outcome
    }
    const budget = () => sliceBudget(this.#busy, options.sliceMs)
    // The fast path: rows in one transaction, no savepoints, until the time slice is spent;
    // consecutive snapshots of one stream go in one multi-row upsert. A row that throws rolls the
    // whole slice back; it is then redone row by row, each in a savepoint.
    const fast = options.sqlite.transaction((rows: readonly InboxRow[]): Settled[] => {
      const started = performance.now()
      const out: Settled[] = []
      // At least one row per slice: a thread descheduled past the budget before the first check
      // would otherwise settle nothing, and the loop below needs the last settled row.
      for (let i = 0; i < rows.length && (i === 0 || performance.now() - started < budget());) {
        const now = new Date(options.clock.now()).toISOString()
        const run = this.#snapshotRun(rows, i)
        if (run === undefined) {
          out.push({ row: rows[i]!, outcome: applyOne(rows[i]!, now) })
          i++
          continue
        }
        const changed = this.#applier.applySnapshots(run.stream, run.payloads, now)
        for (let k = 0; k < run.payloads.length; k++) {
          out.push({ row: rows[i + k]!, outcome: { kind: 'applied', changed: changed.has(run.payloads[k]!.id as string) } })
        }
        i += run.payloads.length
      }
      // One statement marks every applied row of the slice (those kept with an error are not
      // pending any more, so the range skips them), instead of one per row.
      options.inbox.markProcessedThrough(out[0]!.row.seq, out[out.length - 1]!.row.seq, new Date(options.clock.now()).toISOString())
      return out
    })
    const savepoint = options.sqlite.transaction((row: InboxRow, now: string): ApplyOutcome => {
      const outcome = applyOne(row, now)
      if (outcome.kind === 'applied') options.inbox.markProcessed(row.delivery_id, now)
      return outcome
    })
    const careful = options.sqlite.transaction((rows: readonly InboxRow[]): Settled[] =>
      rows.map((row): Settled => {
        const now = new Date(options.clock.now()).toISOString()
        try {
          return { row, outcome: savepoint(row, now) }
        } catch (err) {
          // The mirror failed, or another process held its lock past the busy timeout, not the
          // row: the whole slice rolls back and waits (see #loop); the row stays pending.
          if (fileFault(err) !== undefined || mirrorLocked(err)) throw err
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
    if (this.#options.objectSink !== undefined) {
      // Both the current text and the one earlier releases stored (OBJECTS_DEFERRED_TEXTS).
      let n = 0
      for (const text of OBJECTS_DEFERRED_TEXTS) n += this.#options.inbox.requeueErrors(text)
      if (n > 0) this.#log.info({ deliveries: n }, 'custom-object deliveries kept until an applier existed are applied now')
    }
    this.#requeuePending = true
    try {
      this.#requeueFaults()
    } catch (err) {
      // Tried again at the top of each slice loop, before anything is applied.
      this.#backOff(err, undefined)
      return
    }
    this.wake()
  }

  #requeueFaults(): void {
    if (!this.#requeuePending) return
    const n = this.#options.inbox.requeueFaults()
    this.#requeuePending = false
    if (n > 0) this.#log.info({ deliveries: n }, 'deliveries an earlier process kept while the mirror failed are applied now')
  }

  /** New rows were stored (the inbox's onStored): a slice starts after `gatherMs`. */
  wake(): void {
    // While the mirror fails, only the back-off timer tries again: not every arriving delivery.
    if (!this.#started || this.#stopped || this.#retryTimer !== undefined) return
    if (this.#running !== undefined) {
      this.#again = true
      // A rest between slices ends early once the backlog nears its bound (see #pace).
      if (this.#endRest !== undefined && this.#options.inbox.filling) this.#endRest()
      return
    }
    if (this.#wakeTimer !== undefined) return
    this.#wakeTimer = setTimeout(
      () => {
        this.#wakeTimer = undefined
        this.#run()
      },
      wakeDelay(this.#options.inbox.filling, this.#options.gatherMs),
    )
  }

  /** The mirror failure applying waits on, if any (for /readyz). */
  get fault(): ProcessorFault | undefined {
    return this.#fault
  }

  /** Resolves when every stored row has been settled and no follow-up GET is in flight. */
  async drained(): Promise<void> {
    await this.#options.relayed?.()
    for (;;) {
      while (this.#running !== undefined || this.#wakeTimer !== undefined) {
        if (this.#running !== undefined) await this.#running
        else await sleep(this.#options.gatherMs ?? DEFAULT_GATHER_MS)
      }
      await this.#followUps?.idle()
      if (this.#running === undefined && this.#wakeTimer === undefined && (this.#followUps?.pending ?? 0) === 0) return
    }
  }

  /** Finishes the batch in hand, cancels follow-ups; unapplied rows wait for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#retryTimer?.()
    this.#retryTimer = undefined
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
    for (let j = i; j < rows.length && j - i < maxRun(this.#busy) && this.#applier.snapshotStream(rows[j]!.event) === stream; j++) {
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
    const size = this.#options.batchSize ?? 100
    let after = 0
    // Rows read but not reached by the last slice (its time ran out): the oldest pending rows, so
    // the next slice starts with them instead of reading them (bodies included) again.
    let rest: InboxRow[] = []
    this.#again = false
    let sliceStart = performance.now()
    while (!this.#stopped) {
      let rows: InboxRow[] = rest
      let settled: Settled[]
      try {
        this.#requeueFaults()
        if (this.#faultRow !== undefined) {
          this.#options.inbox.clearFault(this.#faultRow)
          this.#faultRow = undefined
        }
        rows = rest.length > 0 ? rest : this.#options.inbox.pending(after, size)
        if (rows.length === 0) return this.#recovered()
        settled = this.#applyBatch(rows)
      } catch (err) {
        return this.#backOff(err, rows[0])
      }
      this.#recovered()
      this.#options.inbox.settled(settled.length)
      for (const { row, outcome } of settled) this.#report(row, outcome)
      after = settled[settled.length - 1]!.row.seq
      rest = rows.slice(settled.length)
      await this.#pace(performance.now() - sliceStart)
      sliceStart = performance.now()
    }
  }

  /**
   * The mirror failed (disk full, corrupt pages, I/O) or another process held its lock past the busy
   * timeout, not a row: nothing of the slice was kept.
   * The error is recorded on the delivery at the head of the line when the mirror still takes that
   * write (`status` shows it), and applying waits, twice as long after each failure up to the cap,
   * with one log line per wait and no stack trace: arriving deliveries are still stored and
   * acknowledged, and are applied in order once the mirror works again.
   */
  #backOff(err: unknown, head: InboxRow | undefined): void {
    const fault = fileFault(err)
    const locked = mirrorLocked(err)
    const error =
      fault !== undefined
        ? `${fault.what}: ${fault.fix}`
        : locked
          ? `the mirror is locked by another process (${(err as Error).message}): applying waits for it; if this lasts, look for a process that holds the mirror open in a long write (a \`sqlite3\` shell, a stuck \`fsm-sync\` command)`
          : (err as Error).message
    const attempts = (this.#fault?.attempts ?? 0) + 1
    const retryInMs = retryDelay(attempts, this.#options.storeRetryMs, this.#options.storeRetryMaxMs)
    this.#fault = { error, since: this.#fault?.since ?? new Date(this.#options.clock.now()).toISOString(), attempts, retryInMs }
    let recorded = false
    if (head !== undefined) {
      try {
        this.#options.inbox.markFault(head.delivery_id, error)
        this.#faultRow = head.delivery_id
        recorded = true
      } catch {
        // The mirror does not take even that write; the log line below is the record.
      }
    }
    const fields = { error, code: (err as { code?: unknown }).code, attempts, retryInMs, deliveryId: head?.delivery_id, recorded }
    // An unknown failure gets its stack once; a known mirror fault never needs it.
    if (fault === undefined && !locked && attempts === 1)
      this.#log.error({ ...fields, err }, 'applying webhook deliveries failed: trying again later')
    else this.#log.error(fields, 'applying webhook deliveries failed: the mirror does not work; trying again later')
    this.#retryTimer = this.#options.clock.setTimer(
      retryInMs,
      () => {
        this.#retryTimer = undefined
        this.wake()
      },
      { background: true },
    )
  }

  #recovered(): void {
    if (this.#fault === undefined) return
    this.#log.info({ failedSince: this.#fault.since, attempts: this.#fault.attempts }, 'applying webhook deliveries works again')
    this.#fault = undefined
  }

  /**
   * Acks first, applying as the load allows (the rules: nextPace and nextRestFactor in pacing.ts).
   * With no group committed by the inbox since the last slice ended, the next slice follows at the
   * next turn. While deliveries arrive, slices shrink to BUSY_SLICE_MS and the processor rests
   * between them, `restFactor` times as long as the slice took (at least 1 ms, at most
   * MAX_REST_MS). The factor adapts: if the event loop was more than half busy while the processor
   * rested (the intake was using it), it doubles, else it halves.
   * Measured on the intake bench, a processor that took up to half the loop held the intake to
   * about 0.3 of a bare handler, because each slice also delayed the sync callbacks that answer
   * whole groups; yielding, the intake reaches 0.4-0.5 and the burst's backlog is applied at about
   * 20k deliveries/s once it ends. A steady stream that leaves the loop mostly idle still gets
   * applied as it arrives. Yielding stops while the backlog is past half of its bound (the inbox's
   * `filling`): a flood that lasts then gets slower acks, not 503s.
   */
  async #pace(spent: number): Promise<void> {
    // Past half the backlog bound, applying comes first: yielding further would end in 503s.
    const filling = this.#options.inbox.filling
    if (filling !== this.#filling) {
      this.#filling = filling
      if (filling)
        this.#log.warn(
          { backlog: this.#options.inbox.backlog },
          'webhook backlog past half of webhooks.maxBacklog: applying before acknowledging more, so acks slow down',
        )
      else this.#log.info({ backlog: this.#options.inbox.backlog }, 'webhook backlog back under half of webhooks.maxBacklog')
    }
    const pace = nextPace({
      commits: this.#options.inbox.commits,
      commitsSeen: this.#commitsSeen,
      filling,
      spentMs: spent,
      restFactor: this.#restFactor,
    })
    this.#commitsSeen = this.#options.inbox.commits
    this.#busy = pace.busy
    if (!pace.busy) {
      await nextTurn()
      return
    }
    const before = performance.eventLoopUtilization()
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pace.restMs)
      this.#endRest = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    this.#endRest = undefined
    this.#restFactor = nextRestFactor(this.#restFactor, performance.eventLoopUtilization(before).utilization)
  }

  #report(row: InboxRow, outcome: Settled['outcome']): void {
    const m = this.#options.metrics?.processor
    if (outcome.kind === 'applied') {
      if (m) m.applied++
      if (outcome.followUp !== undefined) this.#followUps?.request(outcome.followUp.stream, outcome.followUp.id)
    } else if (outcome.kind === 'skipped') {
      if (m) m.skipped++
    } else if (outcome.kind === 'deferred') {
      if (m) m.deferred++
    } else {
      if (m) m.failed++
      this.#log.warn(
        { deliveryId: row.delivery_id, event: row.event, error: outcome.error },
        'webhook delivery could not be applied: kept in webhook_inbox with its error',
      )
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
