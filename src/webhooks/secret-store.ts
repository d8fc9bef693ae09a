// The secret store: one row per signing secret the upstream issued for our endpoint (spec, Webhook
// management: POST returns it once; a PUT that changes the url issues a new one). It lives in the
// mirror, which is created readable by its owner only (contract.md, Guarantees 6); no other table,
// log line or output ever holds a secret. A superseded secret stays accepted for a grace period so
// that deliveries signed before the rotation still verify.
import type { Sqlite } from '../store/mirror-database.js'
import type { ActiveSecret } from './signature.js'
import { parseInstant } from '../store/timestamps.js'

export interface StoredEndpoint {
  endpointId: string
  url: string
  createdAt: string
  supersededAt: string | null
}

interface SecretRow {
  endpoint_id: string
  url: string
  secret: string
  created_at: string
  superseded_at: string | null
}

const HOUR_MS = 3_600_000

export class SecretStore {
  readonly #sqlite: Sqlite
  readonly #activeStmt
  readonly #currentStmt
  readonly #dataVersion
  /** The last `active` answer, valid while no connection wrote and no grace period ended. */
  #cache: { dataVersion: number; graceHours: number; from: number; until: number; secrets: ActiveSecret[] } | undefined

  constructor(sqlite: Sqlite) {
    this.#sqlite = sqlite
    this.#activeStmt = sqlite.prepare(
      `SELECT endpoint_id, url, secret, created_at, superseded_at FROM webhook_secrets
       WHERE superseded_at IS NULL OR superseded_at > ? ORDER BY id DESC`,
    )
    this.#currentStmt = sqlite.prepare(
      `SELECT endpoint_id, url, secret, created_at, superseded_at FROM webhook_secrets WHERE superseded_at IS NULL ORDER BY id DESC LIMIT 1`,
    )
    // Changes whenever another connection (a `webhooks register` process) commits to the file.
    this.#dataVersion = sqlite.prepare('PRAGMA data_version').pluck()
  }

  /** The endpoint this mirror registered last, without its secret. */
  current(): StoredEndpoint | undefined {
    const row = this.#currentStmt.get() as SecretRow | undefined
    return row === undefined ? undefined : endpointOf(row)
  }

  /** Every registration still accepted at `now`, newest first, without secrets. */
  endpoints(now: number, graceHours: number): StoredEndpoint[] {
    return this.#active(now, graceHours).map(endpointOf)
  }

  /** Secrets accepted at `now`: the current ones and those superseded less than the grace ago. */
  active(now: number, graceHours: number): ActiveSecret[] {
    const dataVersion = this.#dataVersion.get() as number
    const c = this.#cache
    if (c !== undefined && c.dataVersion === dataVersion && c.graceHours === graceHours && now >= c.from && now < c.until) return c.secrets
    const rows = this.#active(now, graceHours)
    const ends = rows.filter((r) => r.superseded_at !== null).map((r) => parseInstant(r.superseded_at!) + graceHours * HOUR_MS)
    const secrets = rows.map((r) => ({ secret: r.secret, label: `endpoint ${r.endpoint_id} (${r.superseded_at === null ? 'current' : 'previous'})` }))
    this.#cache = { dataVersion, graceHours, from: now, until: Math.min(Number.POSITIVE_INFINITY, ...ends), secrets }
    return secrets
  }

  /** Stores a newly issued secret; every earlier one starts its grace period now. */
  record(endpointId: string, url: string, secret: string, nowIso: string): void {
    this.#cache = undefined
    this.#sqlite.transaction(() => {
      this.#sqlite.prepare(`UPDATE webhook_secrets SET superseded_at = ? WHERE superseded_at IS NULL`).run(nowIso)
      this.#sqlite
        .prepare(`INSERT INTO webhook_secrets (endpoint_id, url, secret, created_at) VALUES (?, ?, ?, ?)`)
        .run(endpointId, url, secret, nowIso)
    })()
  }

  /** Records a url change that issued no new secret: the current secret keeps serving the new url. */
  updateUrl(endpointId: string, url: string): void {
    this.#cache = undefined
    this.#sqlite.prepare(`UPDATE webhook_secrets SET url = ? WHERE endpoint_id = ? AND superseded_at IS NULL`).run(url, endpointId)
  }

  #active(now: number, graceHours: number): SecretRow[] {
    return this.#activeStmt.all(new Date(now - graceHours * HOUR_MS).toISOString()) as SecretRow[]
  }
}

function endpointOf(row: SecretRow): StoredEndpoint {
  return { endpointId: row.endpoint_id, url: row.url, createdAt: row.created_at, supersededAt: row.superseded_at }
}

export interface SecretSourceOptions {
  /** FSM_WEBHOOK_SECRETS: the first is current, the rest still accepted (contract.md, Configuration). */
  envSecrets: readonly string[]
  store?: SecretStore | undefined
  graceHours: number
  now: () => number
}

/**
 * Every secret a delivery may be signed with, checked for each request: `webhooks register` runs
 * in another process while the daemon serves, and a delivery refused for a stale cache is lost.
 * The store answers from its cache unless `PRAGMA data_version` says the file changed or a grace
 * period ended.
 */
export function secretSource(options: SecretSourceOptions): () => ActiveSecret[] {
  const env = options.envSecrets.map((secret, i) => ({ secret, label: `FSM_WEBHOOK_SECRETS#${i}` }))
  return () => {
    const stored = options.store?.active(options.now(), options.graceHours) ?? []
    const seen = new Set<string>()
    return [...env, ...stored].filter((s) => !seen.has(s.secret) && seen.add(s.secret))
  }
}
