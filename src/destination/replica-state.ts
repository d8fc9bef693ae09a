// What the replica's state row (_fsm_sync_state) says was last written besides the cursor: each
// table without change_log entries by fingerprint, an appended table's watermark, the views' hash.
// Kept with the cursor, so a start rewrites nothing unchanged. Pure: no I/O.
import { createHash } from 'node:crypto'
import type { TableSpec } from '../model/table-spec.js'

/** The declarations' hash a state row records: another one means the tables changed shape. */
export function tablesHashOf(tables: readonly TableSpec[]): string {
  const value = tables.map((t) => [t.name, t.primaryKey, t.columns.map((c) => [c.name, c.kind])])
  return createHash('sha256').update(JSON.stringify(value)).digest('hex')
}

/** What was last written of the tables compared by content, and of the views. */
export interface WrittenState {
  /** The fingerprint (tableFingerprint) last written of each table without change_log entries. */
  readonly fingerprints: Map<string, string>
  /** An appended table's watermark (TableSpec.appendedBy): the newest value of that column written. */
  readonly watermarks: Map<string, string>
  /** The hash of the views' DDL last built; undefined when never built. */
  viewsHash: string | undefined
}

/** What one batch did: nothing to do, something applied, or the replica must be loaded first. */
export type BatchOutcome =
  | { kind: 'idle' }
  | { kind: 'applied'; changes: number }
  /** Another replicator moved the cursor: it was read again, and the next batch starts from it. */
  | { kind: 'cursor-moved' }
  /** The changes after the cursor were pruned from the mirror. */
  | { kind: 'needs-load'; reason: string }

/** In the state row's fingerprints column, a watermark is kept under its table's name and this suffix. */
const WATERMARK_SUFFIX = '@'
/** Older releases could keep the views' hash among the fingerprints. */
const VIEWS_KEY = 'views'

export function emptyWritten(): WrittenState {
  return { fingerprints: new Map(), watermarks: new Map(), viewsHash: undefined }
}

export function copyWritten(w: WrittenState): WrittenState {
  return { fingerprints: new Map(w.fingerprints), watermarks: new Map(w.watermarks), viewsHash: w.viewsHash }
}

/** The state row's fingerprints (JSON) and views_hash columns; an unreadable column reads as empty. */
export function parseWritten(fingerprints: string | null, viewsHash: string | null): WrittenState {
  const w = emptyWritten()
  let entries: [string, string][] = []
  if (fingerprints !== null) {
    try {
      const o = JSON.parse(fingerprints) as Record<string, unknown>
      entries = Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string')
    } catch {
      entries = []
    }
  }
  for (const [key, value] of entries) {
    if (key === VIEWS_KEY) w.viewsHash = value
    else if (key.endsWith(WATERMARK_SUFFIX)) w.watermarks.set(key.slice(0, -WATERMARK_SUFFIX.length), value)
    else w.fingerprints.set(key, value)
  }
  if (viewsHash !== null) w.viewsHash = viewsHash
  return w
}

/** The fingerprints column's JSON: fingerprints and watermarks (the views' hash has its own column). */
export function fingerprintsJson(w: WrittenState): string {
  const o: Record<string, string> = {}
  for (const [table, fp] of w.fingerprints) o[table] = fp
  for (const [table, mark] of w.watermarks) o[table + WATERMARK_SUFFIX] = mark
  return JSON.stringify(o)
}

/** Where the replica stands against the mirror at a start. */
export interface StartingPoint {
  /** Why a table or column was created again (postgres-schema.ts), until a load. */
  schemaReload: string | null
  /** The state row's declarations' hash differs from this release's. */
  tablesChanged: boolean
  cursor: number
  /** The mirror's last change, and the oldest it keeps (undefined: none kept). */
  lastSeq: number
  firstKept: number | undefined
}

/** Why the replica must be loaded from a snapshot, or null when it can follow the changes from its cursor. */
export function loadReason(p: StartingPoint): string | null {
  if (p.schemaReload !== null) return p.schemaReload
  if (p.tablesChanged) return 'the tables changed shape'
  const { cursor, lastSeq: last, firstKept: first } = p
  if (cursor > last) return `its cursor (${cursor}) is past the mirror's last change (${last}): another mirror`
  if (cursor < last && (first === undefined || first > cursor + 1)) {
    return `the mirror pruned changes it had not read (its cursor is ${cursor}, the oldest change kept is ${first ?? last + 1})`
  }
  return null
}
