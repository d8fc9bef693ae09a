// In-memory storage of one resource. Each record keeps its response document (already in the
// API's key order), its instants as numbers for fast filtering, a soft-delete flag and a cached
// JSON text, so a 100-row page is a string join rather than a fresh serialisation.
import { iso } from './iso-time.js'

export type Doc = Record<string, unknown>

export interface StoredRecord<I = unknown> {
  readonly id: string
  doc: Doc
  createdMs: number
  updatedMs: number
  deleted: boolean
  /** Fields the service keeps but never returns (spec: e.g. `linkedRecords`, job targets). */
  internal: I
  json: string | undefined
  /** The same text as UTF-8 bytes, so a page is a buffer concatenation. */
  bytes: Buffer | undefined
}

type Comparable = string | number | boolean | null | undefined

function rank(v: Comparable): number {
  if (v === null || v === undefined) return 0
  if (typeof v === 'number') return 1
  if (typeof v === 'string') return 2
  return 3
}

/** MongoDB-like order: missing/null first, then numbers, then strings, then booleans. */
export function compareValues(a: Comparable, b: Comparable): number {
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra - rb
  if (a === b || a === null || a === undefined || b === null || b === undefined) return 0
  return a < b ? -1 : 1
}

export class Collection<I = unknown> {
  private readonly records = new Map<string, StoredRecord<I>>()
  private version = 0
  private readonly sortCache = new Map<string, { version: number; rows: StoredRecord<I>[] }>()

  /** Changes with every insert and write (lets derived state know it is stale). */
  get revision(): number {
    return this.version
  }

  get size(): number {
    return this.records.size
  }

  get(id: string): StoredRecord<I> | undefined {
    return this.records.get(id)
  }

  /** A live (not soft-deleted) record. */
  live(id: string): StoredRecord<I> | undefined {
    const r = this.records.get(id)
    return r === undefined || r.deleted ? undefined : r
  }

  insert(id: string, doc: Doc, createdMs: number, updatedMs: number, internal: I): StoredRecord<I> {
    const record: StoredRecord<I> = { id, doc, createdMs, updatedMs, deleted: false, internal, json: undefined, bytes: undefined }
    this.records.set(id, record)
    this.version++
    return record
  }

  /**
   * Replaces the document after a write. `updatedMs` is the write time from the clock (spec: several
   * writes in one millisecond share an updatedAt); `rebuild` re-orders the keys canonically.
   */
  write(record: StoredRecord<I>, doc: Doc, updatedMs: number): void {
    record.doc = { ...doc, updatedAt: iso(updatedMs) }
    record.updatedMs = updatedMs
    record.json = undefined
    record.bytes = undefined
    this.version++
  }

  softDelete(record: StoredRecord<I>, atMs: number): void {
    record.deleted = true
    this.write(record, record.doc, atMs)
  }

  all(): StoredRecord<I>[] {
    return [...this.records.values()]
  }

  /** Live records sorted by a document field; cached until the next write. */
  sorted(field: string, dir: 'asc' | 'desc'): StoredRecord<I>[] {
    const key = `${field}:${dir}`
    const hit = this.sortCache.get(key)
    if (hit !== undefined && hit.version === this.version) return hit.rows
    const sign = dir === 'asc' ? 1 : -1
    const rows = this.all().filter((r) => !r.deleted)
    const value = (r: StoredRecord<I>): Comparable =>
      field === 'updatedAt' ? r.updatedMs : field === 'createdAt' ? r.createdMs : (r.doc[field] as Comparable)
    // Ties break on id in the same direction, so the order is total and stable between requests.
    rows.sort((a, b) => sign * (compareValues(value(a), value(b)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)))
    this.sortCache.set(key, { version: this.version, rows })
    return rows
  }

  /** Cached JSON text of a record's document. */
  static json(record: StoredRecord): string {
    record.json ??= JSON.stringify(record.doc)
    return record.json
  }

  static bytes(record: StoredRecord): Buffer {
    record.bytes ??= Buffer.from(Collection.json(record))
    return record.bytes
  }
}
