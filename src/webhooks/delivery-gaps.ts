// Gap detection: the upstream never re-sends a failed delivery (the API's specification, Events,
// Retry schedule: the retry sweep "is not running"), so a delivery in `retrying` or `failed` is a
// change we missed. The daemon calls `check()` on a schedule, runs an incremental sweep of each
// stream it returns at once, and then `commit()`s the cursor, so a crash before the sweeps checks
// again.
import { z } from 'zod'
import type { ApiClient } from '../api/index.js'
import type { Logger } from '../log/logger.js'
import { systemClock } from '../model/clock.js'
import type { Sqlite } from '../store/sqlite/mirror-database.js'
import { deliverySelection } from './delivery-selection.js'
import { streamOfEvent } from './events.js'
import { listDeliveries, type DeliveryRecord } from './registration.js'
import type { SecretStore } from './secret-store.js'
import { parseStoredCursor } from '../store/repositories/stored-cursor.js'
import { WebhookStateStore } from '../store/repositories/webhook-state.js'
import { parseInstant } from '../model/timestamps.js'

/** The newest failure time seen, and the ids seen at exactly that time (ties, like a keyset); read back through this schema. */
export const GapCursorSchema = z.object({
  since: z
    .string()
    .refine((text) => !Number.isNaN(parseInstant(text)), 'not a time')
    .nullable(),
  idsAtSince: z.array(z.string()),
})
export type GapCursor = z.infer<typeof GapCursorSchema>

export interface GapPlan {
  /** Streams to sweep at once (as `--stream` names them), sorted. */
  streams: string[]
  /** Failed deliveries newer than the previous check. */
  missed: DeliveryRecord[]
  cursor: GapCursor
}

export const EMPTY_GAP_CURSOR: GapCursor = { since: null, idsAtSince: [] }

/** When a delivery failed: its last attempt, else its creation. NaN when neither is a date. */
function failedAt(d: DeliveryRecord): number {
  return parseInstant(d.lastAttemptAt ?? d.createdAt ?? '')
}

/** Pure: which failed deliveries are new since `cursor`, the streams they touch, the next cursor. */
export function planGapSweeps(records: readonly DeliveryRecord[], cursor: GapCursor): GapPlan {
  const since = cursor.since === null ? Number.NEGATIVE_INFINITY : parseInstant(cursor.since)
  const seen = new Set(cursor.idsAtSince)
  const missed = records.filter((d) => {
    if (d.status !== 'retrying' && d.status !== 'failed') return false
    const at = failedAt(d)
    // A record without a usable time is always reported: sweeping once too often costs little.
    if (Number.isNaN(at)) return true
    return at > since || (at === since && !seen.has(d.id))
  })
  const streams = [...new Set(missed.map((d) => streamOfEvent(d.event)).filter((s): s is string => s !== undefined))].sort()
  let next = cursor
  for (const d of missed) {
    const at = failedAt(d)
    if (Number.isNaN(at)) continue
    const nextSince = next.since === null ? Number.NEGATIVE_INFINITY : parseInstant(next.since)
    if (at > nextSince) next = { since: new Date(at).toISOString(), idsAtSince: [d.id] }
    else if (at === nextSince && !next.idsAtSince.includes(d.id)) next = { since: next.since, idsAtSince: [...next.idsAtSince, d.id] }
  }
  return { streams, missed, cursor: next }
}

export interface DeliveryGapCheckOptions {
  client: Pick<ApiClient, 'get'>
  sqlite: Sqlite
  secrets: SecretStore
  graceHours: number
  logger: Logger
  /** The process's clock (the daemon passes its own). Default: the system clock. */
  now?: () => number
  /** The config's `streams`: a failed delivery of another stream is passed over, never swept. Default: all. */
  selectedStreams?: readonly string[] | undefined
}

const KEY = 'delivery-gaps'

export class DeliveryGapCheck {
  readonly #options: DeliveryGapCheckOptions

  constructor(options: DeliveryGapCheckOptions) {
    this.#options = options
  }

  /**
   * The stored cursor. One that does not parse is set aside for the empty cursor: every failed
   * delivery upstream still lists is reported again, which costs a sweep of its streams, where a
   * bad cursor would fail every check (or, with a `since` that is not a time, hide every failure).
   */
  cursor(): GapCursor {
    const value = new WebhookStateStore(this.#options.sqlite).get(KEY)
    const stored = parseStoredCursor(value ?? null, GapCursorSchema)
    if (stored.ok) return stored.cursor ?? EMPTY_GAP_CURSOR
    this.#options.logger.warn(
      { key: KEY, problem: stored.problem },
      'stored delivery-gap cursor could not be read; every failed delivery still listed upstream is checked again',
    )
    return EMPTY_GAP_CURSOR
  }

  /** Reads `retrying` and `failed` deliveries of every endpoint this mirror registered. */
  async check(signal?: AbortSignal): Promise<GapPlan & { commit(): void }> {
    const now = this.#options.now ?? (() => systemClock.now())
    const endpoints = [...new Set(this.#options.secrets.endpoints(now(), this.#options.graceHours).map((e) => e.endpointId))]
    const records: DeliveryRecord[] = []
    for (const id of endpoints) {
      for (const status of ['retrying', 'failed'] as const)
        records.push(...(await listDeliveries(this.#options.client, id, { status, signal })))
    }
    const found = planGapSweeps(records, this.cursor())
    // Deliveries of unselected streams still move the cursor; sweeping them would spend budget on
    // streams the mirror does not keep.
    const selection = deliverySelection(this.#options.selectedStreams)
    const plan = { ...found, streams: found.streams.filter((s) => selection.stream(s)) }
    const notSelected = found.streams.filter((s) => !selection.stream(s))
    if (plan.streams.length > 0) {
      this.#options.logger.warn(
        { deliveries: plan.missed.length, streams: plan.streams, notSelected },
        'webhook deliveries failed upstream and will not be re-sent: sweeping the affected selected streams now',
      )
    } else if (plan.missed.length > 0) {
      this.#options.logger.info(
        { deliveries: plan.missed.length, notSelected },
        "webhook deliveries failed upstream, none of a selected stream: nothing to sweep (their streams are not in the config's streams)",
      )
    }
    const commit = (): void => {
      new WebhookStateStore(this.#options.sqlite).set(KEY, JSON.stringify(plan.cursor), new Date(now()).toISOString())
    }
    return { ...plan, commit }
  }
}
