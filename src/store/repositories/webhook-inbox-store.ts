// The rows of webhook_inbox (migration 0003): what intake stores, what the processor reads and
// settles. The group commit, the log sync and the backlog bound around them are the webhooks'
// (src/webhooks/inbox.ts); this is only how a delivery is kept. Every statement is prepared once
// here and run raw: each runs once per delivery (the insert on intake, the reads and marks in the
// processor), the measured hot path of bench/webhook-intake.bench.ts.
import { isUtf8 } from 'node:buffer'
import type { Sqlite } from '../sqlite/mirror-database.js'
import { firstRow, mirrorQuery } from '../sqlite/typed-query.js'
import { withFullSync } from '../sqlite/full-sync.js'

/** A verified delivery as intake hands it over. */
export interface InboxDelivery {
  deliveryId: string
  event: string
  /** The body as signed. */
  body: Buffer
  /** Which secret verified it (a label, never the secret). */
  verifiedWith: string
}

/** A stored delivery as the processor reads it: `raw` holds a UTF-8 body, `raw_bytes` any other. */
export interface InboxRow {
  delivery_id: string
  seq: number
  event: string
  raw: string | null
  raw_bytes: Buffer | null
}

export interface InboxCounts {
  /** Stored, not applied yet, no error. */
  backlog: number
  /** Kept with an error (not applied). */
  failed: number
  /** Set aside unapplied, with the reason in the `skipped` column. */
  skipped: number
}

export class WebhookInboxStore {
  readonly #insert
  readonly #insertGroup: (group: readonly { delivery: InboxDelivery; receivedAt: string }[]) => boolean[]
  readonly #syncing: ReturnType<typeof withFullSync>
  readonly #pending
  readonly #processed
  readonly #processedRange
  readonly #failed
  readonly #skipped
  readonly #fault
  readonly #clearFault
  readonly #requeuePrefix
  readonly #requeueError
  readonly #has
  readonly #sqlite: Sqlite

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
    // Raw: once per delivery on intake, inside the group commit.
    this.#insert = sqlite.prepare(
      `INSERT INTO webhook_inbox (delivery_id, seq, event, received_at, raw, raw_bytes, verified_with)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM webhook_inbox), ?, ?, ?, ?, ?)
       ON CONFLICT(delivery_id) DO NOTHING`,
    )
    this.#insertGroup = sqlite.transaction((group: readonly { delivery: InboxDelivery; receivedAt: string }[]) =>
      group.map(({ delivery: d, receivedAt }) => {
        // The body is kept as signed: as text when it is valid UTF-8 (every real delivery), else its exact bytes.
        const text = isUtf8(d.body) ? d.body.toString('utf8') : null
        return this.#insert.run(d.deliveryId, d.event, receivedAt, text, text === null ? d.body : null, d.verifiedWith).changes > 0
      }),
    )
    this.#syncing = withFullSync(sqlite)
    // Raw, as every statement below: the processor runs them for each delivery it settles.
    this.#pending = sqlite.prepare(
      `SELECT delivery_id, seq, event, raw, raw_bytes FROM webhook_inbox
       WHERE processed_at IS NULL AND error IS NULL AND seq > ? ORDER BY seq LIMIT ?`,
    )
    this.#processed = sqlite.prepare(`UPDATE webhook_inbox SET processed_at = ?, attempts = attempts + 1 WHERE delivery_id = ?`)
    this.#processedRange = sqlite.prepare(
      `UPDATE webhook_inbox SET processed_at = ?, attempts = attempts + 1
       WHERE seq BETWEEN ? AND ? AND processed_at IS NULL AND error IS NULL`,
    )
    this.#failed = sqlite.prepare(`UPDATE webhook_inbox SET error = ?, attempts = attempts + 1 WHERE delivery_id = ?`)
    this.#skipped = sqlite.prepare(`UPDATE webhook_inbox SET processed_at = ?, skipped = ?, attempts = attempts + 1 WHERE delivery_id = ?`)
    this.#fault = sqlite.prepare(
      `UPDATE webhook_inbox SET error = ?, attempts = attempts + 1 WHERE delivery_id = ? AND processed_at IS NULL`,
    )
    this.#clearFault = sqlite.prepare(
      `UPDATE webhook_inbox SET error = NULL WHERE delivery_id = ? AND processed_at IS NULL AND error LIKE ? || '%'`,
    )
    this.#requeuePrefix = sqlite.prepare(`UPDATE webhook_inbox SET error = NULL WHERE processed_at IS NULL AND error LIKE ? || '%'`)
    this.#requeueError = sqlite.prepare(`UPDATE webhook_inbox SET error = NULL WHERE processed_at IS NULL AND error = ?`)
    this.#has = sqlite.prepare(`SELECT 1 FROM webhook_inbox WHERE delivery_id = ?`).pluck()
  }

  /** The delivery id is stored (one lookup in its unique index). */
  has(deliveryId: string): boolean {
    return this.#has.get(deliveryId) !== undefined
  }

  /**
   * Inserts a group of deliveries in one transaction; for each, true when it was new, false for a
   * delivery id already stored (a duplicate). `fullSync`: commit with synchronous=FULL, for a
   * connection whose -wal file the caller cannot sync itself.
   */
  insertGroup(group: readonly { delivery: InboxDelivery; receivedAt: string }[], fullSync: boolean): boolean[] {
    return this.#syncing(fullSync, () => this.#insertGroup(group))
  }

  /** Unapplied rows after `afterSeq`, in receipt order. */
  pending(afterSeq: number, limit: number): InboxRow[] {
    // The statement's columns are InboxRow's.
    return this.#pending.all(afterSeq, limit) as InboxRow[]
  }

  markProcessed(deliveryId: string, nowIso: string): void {
    this.#processed.run(nowIso, deliveryId)
  }

  /** Marks applied every row still pending with seq in [first, last]. */
  markProcessedThrough(first: number, last: number, nowIso: string): void {
    this.#processedRange.run(nowIso, first, last)
  }

  markSkipped(deliveryId: string, reason: string, nowIso: string): void {
    this.#skipped.run(nowIso, reason, deliveryId)
  }

  markFailed(deliveryId: string, error: string): void {
    this.#failed.run(error, deliveryId)
  }

  /** Keeps `error` on a row not applied yet, leaving it unsettled. */
  markFault(deliveryId: string, error: string): void {
    this.#fault.run(error, deliveryId)
  }

  /** Clears an unsettled row's error if it starts with `prefix`. */
  clearFault(deliveryId: string, prefix: string): void {
    this.#clearFault.run(deliveryId, prefix)
  }

  /** Clears the error of every unsettled row whose error starts with `prefix`; returns how many. */
  requeueWithPrefix(prefix: string): number {
    return this.#requeuePrefix.run(prefix).changes
  }

  /** Clears the error of every unsettled row whose error is exactly `error`; returns how many. */
  requeueError(error: string): number {
    return this.#requeueError.run(error).changes
  }

  /** Rows waiting to be applied (read through the index of pending rows, without a scan). */
  backlog(): number {
    const row = firstRow(
      this.#sqlite,
      mirrorQuery
        .selectFrom('webhook_inbox')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('processed_at', 'is', null)
        .where('error', 'is', null),
    )
    return row?.n ?? 0
  }
}

/** Rows waiting to be applied, kept with an error, and set aside (one pass over the table), for reports. */
export function inboxCounts(sqlite: Sqlite): InboxCounts {
  // A mirror the daemon has not migrated yet (read-only in status) has no skipped column: none skipped.
  const hasSkipped = sqlite.prepare(`SELECT 1 FROM pragma_table_info('webhook_inbox') WHERE name = 'skipped'`).get() !== undefined
  // A plain statement (`status` loads no query builder): three integer counts, named as InboxCounts names them.
  const skipped = hasSkipped ? 'count(*) FILTER (WHERE skipped IS NOT NULL)' : '0'
  const row = sqlite
    .prepare(
      `SELECT count(*) FILTER (WHERE processed_at IS NULL AND error IS NULL) AS backlog, count(*) FILTER (WHERE error IS NOT NULL) AS failed, ${skipped} AS skipped FROM webhook_inbox`,
    )
    .get() as InboxCounts | undefined
  return { backlog: row?.backlog ?? 0, failed: row?.failed ?? 0, skipped: row?.skipped ?? 0 }
}

/**
 * A reader of the events of deliveries stored after the newest one at the time of the call, in
 * receipt order, at most 10,000 a call (the sweep planner's hints). Raw: it runs every planner round.
 */
export function inboxEventsReader(sqlite: Sqlite): () => { seq: number; event: string }[] {
  const next = sqlite.prepare(`SELECT seq, event FROM webhook_inbox WHERE seq > ? ORDER BY seq LIMIT 10000`)
  // seq is INTEGER NOT NULL; max() over no rows is NULL, coalesced to 0.
  let after = sqlite.prepare(`SELECT coalesce(max(seq), 0) FROM webhook_inbox`).pluck().get() as number
  return () => {
    // Two NOT NULL columns, named as the row type names them.
    const rows = next.all(after) as { seq: number; event: string }[]
    if (rows.length > 0) after = rows[rows.length - 1]!.seq
    return rows
  }
}
