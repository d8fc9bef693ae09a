// What a stream is, as data: every stream fsm-sync runs is one of these shapes, told apart by
// `kind`, and connectors/index.ts lists them all (STREAMS, the registry). Everything that needs to
// know the streams (the selection of the config's `streams`, the sweep order, reconciliation, the
// webhook routes, the status report) reads the registry instead of naming streams itself.
import type { DiscoveryItem, ObjectSchema } from './custom-objects.js'
import type { Payload, RecordRow, SqlCell } from './rows.js'
import type { TableSpec } from './table-spec.js'

export type Paging = 'updated-keyset'

/** How a stream's deletions show: webhook events, and whether reconciliation finds them. */
export interface Deletions {
  readonly events: readonly string[]
  readonly reconcile: boolean
}

/** A v1 resource read with the updatedAt keyset, kept current by webhooks. */
export interface RecordStream {
  readonly kind: 'records'
  readonly name: string
  /** v1 list route; `${route}/${id}` is the single-record GET. */
  readonly route: string
  readonly scope: string
  readonly paging: Paging
  readonly table: string
  /** The stream's tables as declared: its own first, then its child tables. */
  readonly tables: readonly TableSpec[]
  /** Child tables written with the parent, for the contract tests and for `--full` resets. */
  readonly childTables: readonly { table: string; parentColumn: string }[]
  readonly toRow: (payload: Payload) => RecordRow
  readonly deletions: Deletions
  /** Webhook events whose payload is a full snapshot of this resource. */
  readonly snapshotEvents: readonly string[]
  /**
   * A webhook event that carries only a status change (no updatedAt): applied to `column` when the
   * stored row still shows the previous status, then the record is fetched.
   */
  readonly statusEvent?: {
    readonly event: string
    readonly column: string
    /** The payload property holding the record's `{id, ...}`. */
    readonly record: string
  }
}

/** A full snapshot read through a legacy route (reference data). */
export interface ReferenceStream {
  readonly kind: 'reference'
  readonly name: string
  readonly route: string
  readonly table: string
  /** Property of `data` holding the array, when `data` is not the array itself. */
  readonly listKey?: string
  /** A single object rather than a list (company); its row's id when the object has none. */
  readonly single?: { readonly fallbackId: string }
  readonly tables: readonly [TableSpec]
  /** The table's own columns of a payload (compiled from the declaration). */
  readonly mapColumns: (p: Payload) => Record<string, SqlCell>
}

/** One listing of account metadata and the table it lands in. */
export interface MetadataListing {
  readonly route: string
  readonly table: string
  readonly tables: readonly [TableSpec]
  /** The table's own columns of a payload (compiled from the declaration). */
  readonly mapColumns: (p: Payload) => Record<string, SqlCell>
}

/** Account metadata: a complete listing (paged or one request), and per listed record a history. */
export interface MetadataStream {
  readonly kind: 'metadata'
  readonly name: string
  readonly scope: string | undefined
  readonly list: MetadataListing & { readonly paged: boolean }
  /** Records read per listed record (`route(id)`), kept as history, with the listed id in `parentColumn`. */
  readonly perRecord?: MetadataListing & { readonly routeOf: (id: string) => string; readonly parentColumn: string }
  readonly tables: readonly TableSpec[]
}

/** The custom-objects stream's name; each custom object is a stream of its own, `objectStream(slug)`. */
export const OBJECTS_STREAM = 'objects'

/** The name of one custom object's stream (`objects:<slug>`), read back by parseObjectStream. */
export function objectStream(slug: string): string {
  return `${OBJECTS_STREAM}:${slug}`
}

/** The slug of one custom object's stream name; undefined for any other name. */
export function parseObjectStream(name: string): string | undefined {
  const prefix = objectStream('')
  const slug = name.startsWith(prefix) ? name.slice(prefix.length) : ''
  return /^[A-Za-z0-9_-]+$/.test(slug) ? slug : undefined
}

/** Custom objects: discovery, one schema and one sweep per object (`objectStream(slug)`). */
export interface CustomObjectsStream {
  readonly kind: 'objects'
  readonly name: string
  readonly discoveryRoute: string
  readonly schemaRoute: (slug: string) => string
  readonly scope: string
  readonly table: string
  readonly typesTable: string
  readonly deletions: Deletions
  readonly snapshotEvents: readonly string[]
  readonly tables: readonly TableSpec[]
  readonly toRow: (payload: Payload) => RecordRow
  readonly toDiscoveryItem: (p: Payload) => DiscoveryItem | undefined
  readonly toSchema: (p: Payload) => ObjectSchema
}

/** A change feed read after an integration's trigger (calendar-a's `sync` route). */
export interface FeedStream {
  readonly kind: 'feed'
  readonly name: string
  readonly route: string
  readonly integration: string
  readonly table: string
  readonly tables: readonly TableSpec[]
}

/** An integration's sync trigger: a POST recorded as a `trigger` run under the integration's name. */
export interface TriggerStream {
  readonly kind: 'trigger'
  readonly name: string
  readonly route: string
  /** The status table its status reads land in, when the integration documents a status route. */
  readonly statusRoute?: string
  readonly tables: readonly TableSpec[]
}

export type StreamDeclaration = RecordStream | ReferenceStream | MetadataStream | CustomObjectsStream | FeedStream | TriggerStream

/** The kinds the config's `streams` (and `--stream`) select; feeds and triggers run on their schedules. */
export const SELECTABLE_KINDS: readonly StreamDeclaration['kind'][] = ['records', 'reference', 'metadata', 'objects']
