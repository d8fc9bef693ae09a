// The keyset walk's decisions, as a state machine: `next()` says which request to send, `absorb()`
// takes its answer and says what to deliver and store. No I/O and no clock: the shell
// (updated-at-keyset.ts) sends the requests. The algorithm is explained in README.md in this folder.
import { MalformedResponseError, PagingStalledError } from '../errors.js'
import type { KeysetRow, ListMeta } from '../response-schemas.js'
import { parseInstant } from '../../model/timestamps.js'
import { toCursor, walkStart, type HeldIds, type KeysetCursor } from './keyset-cursor.js'
import { nextStep, stallLimit, type Step } from './next-step.js'

/** Times a tie is read again from page 1 after its anchor moved before the walk stops trusting its order. */
const MAX_RESTARTS = 2

export interface WalkOptions {
  cursor?: KeysetCursor | undefined
  since?: string | undefined
  /** Page size, clamped to the API's 1-100. */
  limit?: number | undefined
  /** The upstream commit lag the walk allows for. */
  lookbackMs?: number | undefined
}

/** The request the walk wants next. */
export interface WalkRequest extends Step {
  /** The `since` parameter (UTC ISO), or undefined for the whole list. */
  since: string | undefined
}

/** One answer to the request `next()` returned. */
export interface WalkAnswer {
  rows: readonly KeysetRow[]
  meta: ListMeta
  /** The upstream's time of the answer (its `Date` header) in ms, NaN when it sent none. */
  date: number
  /** The local clock when the request was sent. */
  askedAt: number
  /** For errors: the route as the client names it, the path template and the status. */
  route: string
  target: string
  status: number
}

/** What one answer yields: the rows to deliver and the cursor to store with them. */
export interface WalkPage {
  /** Rows not delivered before in this walk (possibly none: commit the cursor anyway). */
  rows: KeysetRow[]
  meta: ListMeta
  cursor: KeysetCursor | undefined
  /**
   * Rows of the list after this answer's last row, from its `meta.total`: what the walk has still
   * to read, as the upstream counted it then; 0 once the walk is done; undefined without a total.
   */
  remaining: number | undefined
  request: { since: string | undefined; page: number; limit: number }
}

export interface WalkStep {
  page: WalkPage
  /** The walk is over: send no more requests. */
  done: boolean
  /** The answer had no `Date` header, so the look-back leaned on the newest row read. */
  noDate: boolean
}

/** Where the walk had come before it went back to `stepFrom` to prove a tie complete by count. */
interface Front {
  at: number
  seen: Set<string>
  next: number
}

export class KeysetWalk {
  readonly #maxLimit: number
  readonly #lagMs: number
  /** The stored cursor's delivered ids, held back only when the walk starts at their own instant. */
  readonly #held: HeldIds | undefined
  /** The stored cursor's delivered ids, whatever the start: the cursor never goes behind them. */
  readonly #kept: HeldIds | undefined
  /** The `since` of the next request. */
  #at: number | undefined
  /** The ids delivered whose updatedAt is `at`. */
  #seen: Set<string>
  /** Whether `at` is the updatedAt of a row read (not just where the walk began). */
  #positioned: boolean
  /** The first `read` rows of the list at `at` have been read; `anchor` is the last of them. */
  #read = 0
  #anchor: KeysetRow | undefined
  /** Ids at `at` received since the walk last read page 1 at `at` (delivered or not). */
  #passIds = new Set<string>()
  /** Rows past the tie at `at` delivered while stepping it (`id@ms`): not delivered twice. */
  #beyond = new Set<string>()
  /** Re-reads of the tie at `at` from page 1 after its anchor moved, and the totals its answers gave. */
  #restarts = 0
  #totals = new Set<number | undefined>()
  /** The lowest `since` at which the walk went on although the anchor moved (an unstable tie order). */
  #stepFrom: number | undefined
  /** The newest updatedAt received of every row at or after `stepFrom` (before that: at or after `at`). */
  readonly #received = new Map<string, number>()
  #front: Front | undefined
  /** The newest updatedAt received (or held): the look-back's reference without a Date header. */
  #newest: number
  /** The lowest instant at which a row may still appear late, over the requests made so far. */
  #lateFrom = Number.POSITIVE_INFINITY
  /** Requests since the cursor last moved or a row was last delivered. */
  #idle = 0
  #pending: WalkRequest | undefined

  constructor(options: WalkOptions = {}) {
    this.#maxLimit = Math.min(100, Math.max(1, Math.floor(options.limit ?? 100)))
    this.#lagMs = Math.max(0, options.lookbackMs ?? 0)
    const start = walkStart(options.cursor, options.since, this.#lagMs)
    this.#kept = start.held
    this.#held = start.held !== undefined && start.at === start.held.at ? start.held : undefined
    this.#at = start.at
    this.#seen = this.#seenAt(this.#at, [])
    this.#positioned = this.#kept === undefined
    this.#newest = this.#kept?.at ?? Number.NEGATIVE_INFINITY
  }

  /** The request to send next. */
  next(): WalkRequest {
    const step = nextStep(this.#read, this.#maxLimit)
    this.#pending = { ...step, since: this.#at === undefined ? undefined : new Date(this.#at).toISOString() }
    return this.#pending
  }

  /** Takes the answer to the last `next()` request. Throws when the upstream does not page as documented. */
  absorb(answer: WalkAnswer): WalkStep {
    const step = this.#pending
    if (step === undefined) throw new Error('KeysetWalk.absorb called without a request from next()')
    this.#pending = undefined
    const { rows, meta } = answer
    const at = this.#at
    const pageSize = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, step.limit) : step.limit
    const first = rows[0]
    if (at !== undefined && first !== undefined && instant(first) < at) {
      const detail = `a row older than since=${step.since ?? ''} came back: the route does not honour since`
      throw new MalformedResponseError({ route: answer.route, target: answer.target, status: answer.status, detail }, { cause: first })
    }
    const lastAt = rows.length === 0 ? undefined : instant(rows[rows.length - 1]!)
    const full = rows.length >= pageSize
    // Everything at or after `since` has been read once this answer is in: a short page, or
    // `meta.total` reached (spec, Conventions 6).
    const complete = !full || (meta.total !== undefined && meta.total <= step.offset + rows.length)
    const tieIds = rows.filter((r) => instant(r) === at).map((r) => r.id)
    if (step.page === 1) this.#passIds = new Set()
    else if (full && lastAt === at && tieIds.every((id) => this.#passIds.has(id))) {
      // A full page of the tie, every row of it already received in this pass: the route
      // answered an earlier page again instead of the one asked for.
      throw this.#stalled(
        answer,
        step,
        this.#idle + 1,
        `page=${step.page} at since=${step.since ?? ''} brought only rows of an earlier page of the same ${this.#passIds.size}+ rows sharing that updatedAt: the route ignores page, so the rest of them cannot be read`,
      )
    }
    for (const id of tieIds) this.#passIds.add(id)
    // A step past page 1 holds when the anchor is where it was. When it is not, the tie is read
    // again from page 1, up to MAX_RESTARTS times; then the walk goes on and the count decides.
    const anchored = step.offset === 0 || sameRow(rows[this.#read - 1 - step.offset], this.#anchor)
    this.#totals.add(meta.total)
    const restart = !anchored && (this.#restarts < MAX_RESTARTS || meta.total === undefined || this.#totals.size > 1)
    if (!anchored && !restart && at !== undefined) this.#stepFrom = Math.min(this.#stepFrom ?? at, at)
    const fresh = rows.filter((r) => !this.#delivered(r))
    const before = { at, seen: this.#seen.size }
    for (const r of fresh) {
      if (instant(r) === at) this.#seen.add(r.id)
      else this.#beyond.add(rowKey(r))
    }
    this.#receive(rows)
    // Every row at or after `stepFrom` has been received when an answer at that since counts no
    // more rows than the distinct ids received there.
    const covered = this.#stepFrom !== undefined && at === this.#stepFrom && meta.total !== undefined && this.#received.size >= meta.total
    const noDate = Number.isNaN(answer.date)
    // Without a Date header, the local clock may run ahead of the upstream's: the newest updatedAt
    // received is a time the upstream had certainly reached, so the earlier of the two is taken.
    const observed = noDate ? Math.min(answer.askedAt, this.#newest) : answer.date
    if (complete || (lastAt !== undefined && lastAt > observed - this.#lagMs))
      // Rows at `at` itself inside the margin: 1 ms before it, so that the stored cursor's re-read
      // point lies before its `since` and the next walk delivers them again.
      this.#lateFrom = Math.min(this.#lateFrom, Math.max(at === undefined ? -Infinity : at - 1, observed - this.#lagMs))
    if (restart) this.#restartTie()
    else if (lastAt !== undefined && lastAt !== at) this.#moveTo(lastAt, rows)
    else if (rows.length > 0) {
      this.#read = step.offset + rows.length
      this.#anchor = rows.at(-1)
    }
    if (rows.length > 0) this.#positioned = true
    // Read to the end with the anchor in place, or every row from `stepFrom` on received.
    const done = covered || (this.#stepFrom === undefined && complete && !restart)
    const moved = this.#at !== before.at || this.#seen.size !== before.seen || fresh.length > 0
    this.#idle = moved ? 0 : this.#idle + 1
    const widest = meta.limit !== undefined && meta.limit > 0 ? Math.min(meta.limit, this.#maxLimit) : this.#maxLimit
    if (!done && this.#idle >= stallLimit(this.#seen.size, widest)) {
      const detail = `${this.#idle} requests at since=${step.since ?? '(none)'} delivered nothing new and did not move the cursor`
      throw this.#stalled(answer, step, this.#idle, detail)
    }
    const { cursor, next } = this.#cursor(done, complete && !restart && lastAt === this.#at)
    const remaining = done ? 0 : meta.total === undefined ? undefined : Math.max(0, meta.total - (step.offset + rows.length))
    const page = { rows: fresh, meta, cursor, remaining, request: { since: step.since, page: step.page, limit: step.limit } }
    if (!done && complete && !restart && this.#stepFrom !== undefined) this.#backToStepFrom(next)
    return { page, done, noDate }
  }

  /**
   * The cursor to store after this answer, and where the next walk would start. Once every row at
   * `at` has been read (`endsAtTie`), the next walk may start just after it, unless a late row may
   * still come. Until the rows from `stepFrom` on are proven received, the next walk starts there.
   */
  #cursor(done: boolean, endsAtTie: boolean): { cursor: KeysetCursor | undefined; next: number } {
    const at = this.#at
    if (this.#front !== undefined && at !== undefined && at >= this.#front.at) this.#front = undefined
    const front = this.#front
    const next = front !== undefined ? front.next : at === undefined ? Infinity : endsAtTie ? at + 1 : at
    const [cursorAt, cursorSeen] = front === undefined ? [at, this.#positioned ? this.#seen : undefined] : [front.at, front.seen]
    const unproven = done || this.#stepFrom === undefined ? Infinity : this.#stepFrom
    return { cursor: toCursor(cursorAt, cursorSeen, this.#kept, Math.min(this.#lateFrom, next, unproven)), next }
  }

  #delivered(row: KeysetRow): boolean {
    const t = instant(row)
    const held = this.#held
    return (
      (t === this.#at && this.#seen.has(row.id)) ||
      (held !== undefined && t === held.at && held.ids.has(row.id)) ||
      this.#beyond.has(rowKey(row)) ||
      this.#received.get(row.id) === t
    )
  }

  #receive(rows: readonly KeysetRow[]): void {
    const base = this.#stepFrom ?? this.#at ?? Number.NEGATIVE_INFINITY
    for (const r of rows) {
      const t = instant(r)
      if (t >= base && !((this.#received.get(r.id) ?? Number.NEGATIVE_INFINITY) >= t)) this.#received.set(r.id, t)
      if (t > this.#newest) this.#newest = t
    }
  }

  /** The tie moved while it was stepped: read it again from page 1. */
  #restartTie(): void {
    this.#restarts++
    this.#read = 0
    this.#anchor = undefined
  }

  /** Past the rows at `at`: the rows at `lastAt` in this answer are the first at that since. */
  #moveTo(lastAt: number, rows: readonly KeysetRow[]): void {
    const atLast = rows.filter((r) => instant(r) === lastAt)
    this.#at = lastAt
    this.#seen = this.#seenAt(lastAt, atLast)
    this.#read = atLast.length
    this.#anchor = atLast.at(-1)
    this.#passIds = new Set(atLast.map((r) => r.id))
    this.#resetTie()
    if (this.#stepFrom === undefined) for (const [id, t] of this.#received) if (t < lastAt) this.#received.delete(id)
  }

  /** Read to the end, but a row from `stepFrom` on may have been skipped: read again from there. */
  #backToStepFrom(next: number): void {
    const stepFrom = this.#stepFrom!
    const at = this.#at
    if (at !== undefined && (this.#front === undefined || at > this.#front.at)) this.#front = { at, seen: new Set(this.#seen), next }
    this.#at = stepFrom
    this.#seen = new Set([...this.#received].filter(([, t]) => t === stepFrom).map(([id]) => id))
    this.#read = 0
    this.#anchor = undefined
    this.#passIds = new Set()
    this.#resetTie()
  }

  #resetTie(): void {
    this.#beyond = new Set()
    this.#restarts = 0
    this.#totals = new Set()
  }

  #seenAt(at: number | undefined, rows: readonly KeysetRow[]): Set<string> {
    const held = this.#held
    const seen = new Set<string>(held !== undefined && held.at === at ? held.ids : [])
    for (const r of rows) seen.add(r.id)
    return seen
  }

  #stalled(answer: WalkAnswer, step: WalkRequest, requests: number, detail: string): PagingStalledError {
    return new PagingStalledError(
      { route: answer.route, target: answer.target, requests, detail },
      { cause: { since: step.since, page: step.page, limit: step.limit } },
    )
  }
}

function sameRow(a: KeysetRow | undefined, b: KeysetRow | undefined): boolean {
  return a !== undefined && b !== undefined && a.id === b.id && instant(a) === instant(b)
}

function rowKey(row: KeysetRow): string {
  return `${row.id}@${instant(row)}`
}

function instant(row: KeysetRow): number {
  return parseInstant(row.updatedAt)
}
