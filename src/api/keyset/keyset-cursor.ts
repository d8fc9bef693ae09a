// The keyset walk's stored cursor: what a page commits with its rows, and where the next walk
// starts from it (README.md in this folder, "The cursor" and "Late rows"). Pure.
import { z } from 'zod'
import { parseInstant } from '../../model/timestamps.js'

const instantText = z.string().refine((text) => !Number.isNaN(parseInstant(text)), 'not a time')

/** What to persist with a page's rows, in the same transaction, to resume after it; read back through this schema. */
export const KeysetCursorSchema = z.object({
  /** UTC ISO instant (with `Z`) of the last `updatedAt` committed. */
  since: instantText,
  /** Ids already delivered whose `updatedAt` equals `since`. */
  seenIdsAtCursor: z.array(z.string()),
  /**
   * Where the next walk starts (inclusive): before `since` while rows there may still appear late,
   * `since` + 1 ms once every row at `since` has been read and no late row can come. Absent in
   * cursors stored before it existed: the next walk starts at `since` minus the look-back.
   */
  rereadFrom: instantText.optional(),
})
export type KeysetCursor = z.infer<typeof KeysetCursorSchema>

/** The ids a stored cursor already delivered at its `since` (in ms). */
export interface HeldIds {
  at: number
  ids: Set<string>
}

/** Where a walk starts: the `since` of its first request, and the stored cursor's delivered ids. */
export interface WalkStart {
  at: number | undefined
  held: HeldIds | undefined
}

export function walkStart(cursor: KeysetCursor | undefined, since: string | undefined, lagMs: number): WalkStart {
  if (cursor === undefined) {
    if (since === undefined) return { at: undefined, held: undefined }
    const ms = parseInstant(since)
    if (Number.isNaN(ms)) throw new RangeError(`since is not a date: ${since}`)
    return { at: ms, held: undefined }
  }
  const cursorSince = parseInstant(cursor.since)
  if (Number.isNaN(cursorSince)) throw new RangeError(`cursor since is not a date: ${cursor.since}`)
  const held = { at: cursorSince, ids: new Set(cursor.seenIdsAtCursor) }
  // A cursor from before `rereadFrom`: the look-back behind `since`, once.
  const from = cursor.rereadFrom === undefined ? cursorSince - lagMs : Math.min(parseInstant(cursor.rereadFrom), cursorSince + 1)
  return { at: Number.isNaN(from) ? cursorSince - lagMs : from, held }
}

/**
 * The cursor to store. It never goes back: until the walk has read past the stored cursor, that
 * cursor stays. `seen` holds the ids at `at` when `at` is a row's updatedAt, and is undefined while
 * `at` is only where the walk began.
 */
export function toCursor(
  at: number | undefined,
  seen: Set<string> | undefined,
  held: HeldIds | undefined,
  rereadFrom: number,
): KeysetCursor | undefined {
  if (at === undefined) return undefined
  const [since, ids] = held !== undefined && (seen === undefined || at < held.at) ? [held.at, held.ids] : [at, seen ?? new Set<string>()]
  return {
    since: new Date(since).toISOString(),
    seenIdsAtCursor: [...ids],
    rereadFrom: new Date(Math.min(rereadFrom, since + 1)).toISOString(),
  }
}
