// Each account's webhook signing secrets, shared through Postgres (docs/sharding.md, Webhooks): the
// owner publishes what its secrets file holds, and any replica reads them to verify a delivery for an
// account it does not own. Sealed with FSM_SECRETS_KEY when it is set (secrets-key.ts). A reader
// keeps what it read and reads again on NOTIFY, past a TTL, or when a signature did not verify.
import type { Clock } from '../model/clock.js'
import type { Queryable } from './coordination-schema.js'
import { SECRETS_KEY_VARIABLE, SecretsKeyError, type SecretsKey } from './secrets-key.js'
import type { WebhookTables } from './webhook-schema.js'

/** One issued secret, as the account's secrets file keeps it (without the endpoint's url). */
export interface SharedSecretEntry {
  endpointId: string
  secret: string
  createdAt: string
  supersededAt: string | null
}

/**
 * Adds the account's secrets to those published (sealed when `key` is set) and notifies the readers.
 * A merge, never a replacement: a replica whose secrets file is older (it owned the account before a
 * rotation) or missing (a new owner) cannot take a secret away. An entry superseded anywhere stays
 * superseded (its grace period runs from the earliest). Compare-and-swap on `version`, so two
 * publishers at once both land. Returns false when nothing changed.
 */
export async function publishSecrets(
  db: Queryable,
  t: WebhookTables,
  key: SecretsKey | undefined,
  accountId: string,
  entries: readonly SharedSecretEntry[],
): Promise<boolean> {
  for (;;) {
    const current = await readRow(db, t, key, accountId)
    const merged = mergeEntries(current?.entries ?? [], entries)
    const sealedAsWanted = current !== undefined && current.encrypted === (key !== undefined)
    if (sealedAsWanted && JSON.stringify(merged) === JSON.stringify(current.entries)) return false
    const plain = Buffer.from(JSON.stringify(merged), 'utf8')
    const value = key === undefined ? plain : key.seal(accountId, plain)
    const r =
      current === undefined
        ? await db.query(
            `WITH up AS (
               INSERT INTO ${t.secrets} (account_id, secrets, encrypted) VALUES ($1, $2, $3)
               ON CONFLICT (account_id) DO NOTHING RETURNING account_id)
             SELECT pg_notify($4, account_id) FROM up`,
            [accountId, value, key !== undefined, t.secretsChannel],
          )
        : await db.query(
            `WITH up AS (
               UPDATE ${t.secrets} SET secrets = $2, encrypted = $3, version = version + 1, updated_at = now()
               WHERE account_id = $1 AND version = $5 RETURNING account_id)
             SELECT pg_notify($4, account_id) FROM up`,
            [accountId, value, key !== undefined, t.secretsChannel, current.version],
          )
    if (r.rowCount === 1) return true
    // Another publisher came in between: merge with what it wrote.
  }
}

/** The account's published secrets; undefined when none were published. Throws SecretsKeyError. */
export async function readSecrets(
  db: Queryable,
  t: WebhookTables,
  key: SecretsKey | undefined,
  accountId: string,
): Promise<SharedSecretEntry[] | undefined> {
  return (await readRow(db, t, key, accountId))?.entries
}

async function readRow(
  db: Queryable,
  t: WebhookTables,
  key: SecretsKey | undefined,
  accountId: string,
): Promise<{ entries: SharedSecretEntry[]; encrypted: boolean; version: string } | undefined> {
  const r = await db.query<{ secrets: Buffer; encrypted: boolean; version: string }>(
    `SELECT secrets, encrypted, version FROM ${t.secrets} WHERE account_id = $1`,
    [accountId],
  )
  const row = r.rows[0]
  if (row === undefined) return undefined
  if (row.encrypted && key === undefined)
    throw new SecretsKeyError(
      'SECRETS_KEY_MISSING',
      `the shared webhook secrets of account ${accountId} are encrypted, and ${SECRETS_KEY_VARIABLE} is not set on this replica`,
    )
  // A row in the clear while a key is set: published before the key was (a rolling change); accepted,
  // and sealed by the next publish.
  const plain = row.encrypted ? key!.open(accountId, row.secrets) : row.secrets
  return { entries: (JSON.parse(plain.toString('utf8')) as SharedSecretEntry[]).map(pick), encrypted: row.encrypted, version: row.version }
}

/** The union of two lists by (endpoint, secret), oldest first; superseded if either says so, from the earlier. */
export function mergeEntries(a: readonly SharedSecretEntry[], b: readonly SharedSecretEntry[]): SharedSecretEntry[] {
  const byKey = new Map<string, SharedSecretEntry>()
  for (const e of [...a, ...b].map(pick)) {
    const k = `${e.endpointId}\u0000${e.secret}`
    const seen = byKey.get(k)
    if (seen === undefined) byKey.set(k, e)
    else
      byKey.set(k, {
        ...seen,
        createdAt: earlier(seen.createdAt, e.createdAt)!,
        supersededAt: earlier(seen.supersededAt, e.supersededAt),
      })
  }
  return [...byKey.values()].sort((x, y) =>
    x.createdAt !== y.createdAt
      ? x.createdAt < y.createdAt
        ? -1
        : 1
      : x.endpointId < y.endpointId
        ? -1
        : x.endpointId > y.endpointId
          ? 1
          : 0,
  )
}

/** The earlier of two ISO instants of the same format; null only when both are. */
const earlier = (x: string | null, y: string | null): string | null => (x === null ? y : y === null ? x : x < y ? x : y)

const pick = (e: SharedSecretEntry): SharedSecretEntry => ({
  endpointId: e.endpointId,
  secret: e.secret,
  createdAt: e.createdAt,
  supersededAt: e.supersededAt,
})

export interface SharedSecretsOptions {
  db: Queryable
  tables: WebhookTables
  key: SecretsKey | undefined
  clock: Clock
  /** Read again in the background when older than this (default 30 s); NOTIFY usually comes first. */
  ttlMs?: number
  /** At most one read per account this often on a signature that did not verify (default 1 s). */
  minRefreshMs?: number
}

interface Cached {
  entries: SharedSecretEntry[]
  readAt: number
}

/** A replica's reader, shared by every account it does not own. */
export class SharedSecrets {
  readonly #o: SharedSecretsOptions
  readonly #cache = new Map<string, Cached>()
  readonly #reading = new Map<string, Promise<SharedSecretEntry[]>>()
  /** The owner side: the JSON last published per account, so an unchanged file is not published again. */
  readonly #published = new Map<string, string>()

  constructor(options: SharedSecretsOptions) {
    this.#o = options
  }

  /** What was read last (empty before the first read); starts a read in the background when stale. */
  cached(accountId: string): readonly SharedSecretEntry[] {
    const c = this.#cache.get(accountId)
    if (c === undefined || this.#o.clock.now() - c.readAt >= (this.#o.ttlMs ?? 30_000)) void this.#read(accountId).catch(() => undefined)
    return c?.entries ?? []
  }

  /**
   * Reads the account's secrets now, unless they were read less than minRefreshMs ago (a flood of
   * forged deliveries costs one read a second). Concurrent callers share one read.
   */
  async refresh(accountId: string): Promise<readonly SharedSecretEntry[]> {
    const c = this.#cache.get(accountId)
    if (c !== undefined && this.#o.clock.now() - c.readAt < (this.#o.minRefreshMs ?? 1_000)) return c.entries
    return this.#read(accountId)
  }

  /** A NOTIFY said the account's secrets changed: the next use reads them again. */
  invalidate(accountId: string): void {
    this.#cache.delete(accountId)
    // A read in flight may have started before the change: its answer is not kept.
    this.#reading.delete(accountId)
  }

  /**
   * The side holding a secrets file (the owner, a replica where `webhooks register` ran): adds its
   * entries to the published ones unless they equal what it published last; true when that changed them.
   */
  async publish(accountId: string, entries: readonly SharedSecretEntry[], force = false): Promise<boolean> {
    const json = JSON.stringify(entries.map(pick))
    if (!force && this.#published.get(accountId) === json) return false
    const changed = await publishSecrets(this.#o.db, this.#o.tables, this.#o.key, accountId, entries)
    this.#published.set(accountId, json)
    return changed
  }

  /** The account left this replica: its next takeover publishes again. */
  forgetPublished(accountId: string): void {
    this.#published.delete(accountId)
  }

  #read(accountId: string): Promise<SharedSecretEntry[]> {
    const inFlight = this.#reading.get(accountId)
    if (inFlight !== undefined) return inFlight
    const readAt = this.#o.clock.now()
    const p = readSecrets(this.#o.db, this.#o.tables, this.#o.key, accountId)
      .then((entries) => {
        if (this.#reading.get(accountId) === p) this.#cache.set(accountId, { entries: entries ?? [], readAt })
        return entries ?? []
      })
      .finally(() => {
        if (this.#reading.get(accountId) === p) this.#reading.delete(accountId)
      })
    this.#reading.set(accountId, p)
    return p
  }
}
