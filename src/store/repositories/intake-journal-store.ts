// The process's webhook intake journal (docs/webhooks.md, One journal for every account): one
// SQLite file in the data folder where every account's deliveries are stored before their ack, in
// one commit for all that arrived meanwhile, and removed once relayed into the account's own inbox;
// the ids relayed stay a while (`intake_relayed`), so that the journal alone answers a repeat as a
// duplicate. Its own small file, not a mirror: no migrations, two tables, created on open.
import Database from 'better-sqlite3'
import type { Sqlite } from '../sqlite/mirror-database.js'
import type { InboxDelivery } from './webhook-inbox-store.js'
import { withFullSync } from '../sqlite/full-sync.js'

/** A delivery waiting in the journal, as the relay hands it to the account's inbox. */
export interface JournalRow {
  seq: number
  accountId: string
  delivery: InboxDelivery
  receivedAt: string
}

export interface JournalEntry {
  accountId: string
  delivery: InboxDelivery
  receivedAt: string
}

export class IntakeJournalStore {
  readonly sqlite: Sqlite
  readonly #insertGroup: (group: readonly JournalEntry[]) => boolean[]
  readonly #pending
  readonly #remove: (seqs: readonly number[], nowIso: string, forgetBefore: string) => void
  readonly #counts
  readonly #lastSeq
  readonly #syncing: ReturnType<typeof withFullSync>

  constructor(file: string) {
    const sqlite = new Database(file)
    this.sqlite = sqlite
    sqlite.pragma('journal_mode = WAL')
    // The journal syncs its -wal itself before an ack (webhooks/intake-journal.ts).
    sqlite.pragma('synchronous = NORMAL')
    sqlite.pragma('busy_timeout = 5000')
    // Checkpoints run on the process's checkpoint thread; this is only the writer's backstop.
    sqlite.pragma('wal_autocheckpoint = 10000')
    sqlite.exec(`CREATE TABLE IF NOT EXISTS intake_journal (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      account_id TEXT NOT NULL,
      delivery_id TEXT NOT NULL,
      event TEXT NOT NULL,
      received_at TEXT NOT NULL,
      raw BLOB NOT NULL,
      verified_with TEXT NOT NULL,
      UNIQUE (account_id, delivery_id)
    )`)
    sqlite.exec(`CREATE TABLE IF NOT EXISTS intake_relayed (
      account_id TEXT NOT NULL,
      delivery_id TEXT NOT NULL,
      relayed_at TEXT NOT NULL,
      PRIMARY KEY (account_id, delivery_id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS intake_relayed_at ON intake_relayed (relayed_at)`)
    const insert = sqlite.prepare(
      `INSERT INTO intake_journal (account_id, delivery_id, event, received_at, raw, verified_with)
       SELECT @account, @id, @event, @at, @raw, @via
       WHERE NOT EXISTS (SELECT 1 FROM intake_relayed WHERE account_id = @account AND delivery_id = @id)
       ON CONFLICT (account_id, delivery_id) DO NOTHING`,
    )
    this.#insertGroup = sqlite.transaction((group: readonly JournalEntry[]) =>
      group.map(
        ({ accountId, delivery: d, receivedAt }) =>
          insert.run({ account: accountId, id: d.deliveryId, event: d.event, at: receivedAt, raw: d.body, via: d.verifiedWith }).changes >
          0,
      ),
    )
    this.#pending = sqlite.prepare(
      `SELECT seq, delivery_id, event, received_at, raw, verified_with FROM intake_journal
       WHERE account_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
    )
    const keep = sqlite.prepare(
      `INSERT OR IGNORE INTO intake_relayed (account_id, delivery_id, relayed_at)
       SELECT account_id, delivery_id, ? FROM intake_journal WHERE seq = ?`,
    )
    const remove = sqlite.prepare(`DELETE FROM intake_journal WHERE seq = ?`)
    const prune = sqlite.prepare(`DELETE FROM intake_relayed WHERE relayed_at < ?`)
    this.#remove = sqlite.transaction((seqs: readonly number[], nowIso: string, forgetBefore: string) => {
      for (const seq of seqs) {
        keep.run(nowIso, seq)
        remove.run(seq)
      }
      prune.run(forgetBefore)
    })
    this.#syncing = withFullSync(sqlite)
    this.#lastSeq = sqlite.prepare(`SELECT coalesce(max(seq), 0) FROM intake_journal`).pluck()
    this.#counts = sqlite.prepare(`SELECT account_id, count(*) AS n FROM intake_journal GROUP BY account_id`)
  }

  /**
   * One transaction; for each entry, true when new, false when the account already has it here.
   * `fullSync`: commit with synchronous=FULL, for a caller that cannot sync the -wal file itself.
   */
  insertGroup(group: readonly JournalEntry[], fullSync = false): boolean[] {
    return this.#syncing(fullSync, () => this.#insertGroup(group))
  }

  /** The newest delivery's seq (0 when empty). */
  lastSeq(): number {
    return this.#lastSeq.get() as number
  }

  /** The account's oldest waiting deliveries after `afterSeq` up to `throughSeq`, in receipt order. */
  pending(accountId: string, afterSeq: number, throughSeq: number, limit: number): JournalRow[] {
    const rows = this.#pending.all(accountId, afterSeq, throughSeq, limit) as {
      seq: number
      delivery_id: string
      event: string
      received_at: string
      raw: Buffer
      verified_with: string
    }[]
    return rows.map((r) => ({
      seq: r.seq,
      accountId,
      receivedAt: r.received_at,
      delivery: { deliveryId: r.delivery_id, event: r.event, body: r.raw, verifiedWith: r.verified_with },
    }))
  }

  /**
   * Removes relayed deliveries, keeping their ids (one transaction); forgets the ids relayed before
   * `forgetBefore`.
   */
  remove(seqs: readonly number[], nowIso: string, forgetBefore: string): void {
    if (seqs.length > 0) this.#remove(seqs, nowIso, forgetBefore)
  }

  /** Waiting deliveries per account (at open: what an earlier process left). */
  counts(): Map<string, number> {
    const rows = this.#counts.all() as { account_id: string; n: number }[]
    return new Map(rows.map((r) => [r.account_id, r.n]))
  }

  close(): void {
    this.sqlite.close()
  }
}
