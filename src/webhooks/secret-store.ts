// The secret store: every signing secret the upstream issued for our endpoint (spec, Webhook
// management: POST returns it once; a PUT that changes the url issues a new one). It lives in its
// own 0600 file next to the mirror (src/store/repositories/secrets-file.ts), never in the mirror, which
// warehouse readers may be given; no table, log line or output ever holds a secret. A superseded
// secret stays accepted for a grace period so that deliveries signed before the rotation still verify.
import {
  readSecretsFile,
  secretsFileStamp,
  secretsPathFor,
  writeSecretsFile,
  type SecretEntry,
} from '../store/repositories/secrets-file.js'
import type { ActiveSecret } from './signature.js'
import { parseInstant } from '../model/timestamps.js'

export interface StoredEndpoint {
  endpointId: string
  url: string
  createdAt: string
  supersededAt: string | null
}

export interface SecretStoreOptions {
  /**
   * Runs a read-modify-write of the file alone. `webhooks register` passes the mirror's write lock
   * (an IMMEDIATE transaction), so two registrations at once cannot lose one's secret.
   */
  exclusive?: (work: () => void) => void
}

const HOUR_MS = 3_600_000

export class SecretStore {
  readonly file: string
  readonly #exclusive: (work: () => void) => void
  /** The file as last read, and the stamp it had then. */
  #loaded: { stamp: string | undefined; entries: SecretEntry[] } | undefined
  /** The last `active` answer, valid while the file is unchanged and no grace period ended. */
  #cache: { entries: SecretEntry[]; graceHours: number; from: number; until: number; secrets: ActiveSecret[] } | undefined

  constructor(file: string, options: SecretStoreOptions = {}) {
    this.file = file
    this.#exclusive = options.exclusive ?? ((work) => work())
  }

  /** The store of the mirror at `mirrorPath` (its secrets file beside it). */
  static forMirror(mirrorPath: string, options: SecretStoreOptions = {}): SecretStore {
    return new SecretStore(secretsPathFor(mirrorPath), options)
  }

  /** The endpoint this mirror registered last, without its secret. */
  current(): StoredEndpoint | undefined {
    const entries = this.#entries()
    const last = entries.findLast((e) => e.supersededAt === null)
    return last === undefined ? undefined : endpointOf(last)
  }

  /** Every registration still accepted at `now`, newest first, without secrets. */
  endpoints(now: number, graceHours: number): StoredEndpoint[] {
    return activeEntries(this.#entries(), now, graceHours).map(endpointOf)
  }

  /**
   * Secrets accepted at `now`: the current ones and those superseded less than the grace ago. On the
   * intake's path: one `stat` of the file per call, and a read only when another process (a
   * `webhooks register`) replaced it.
   */
  active(now: number, graceHours: number): ActiveSecret[] {
    const entries = this.#entries()
    const c = this.#cache
    if (c !== undefined && c.entries === entries && c.graceHours === graceHours && now >= c.from && now < c.until) return c.secrets
    const rows = activeEntries(entries, now, graceHours)
    const ends = rows.filter((r) => r.supersededAt !== null).map((r) => parseInstant(r.supersededAt!) + graceHours * HOUR_MS)
    const secrets = activeSecretsOf(entries, now, graceHours)
    this.#cache = { entries, graceHours, from: now, until: Math.min(Number.POSITIVE_INFINITY, ...ends), secrets }
    return secrets
  }

  /** Every entry of the file, secrets included: what the owner of the account publishes to the other replicas. */
  entries(): readonly SecretEntry[] {
    return this.#entries()
  }

  /** Stores a newly issued secret, durably; every earlier one starts its grace period now. */
  record(endpointId: string, url: string, secret: string, nowIso: string): void {
    this.#update((entries) => [
      ...entries.map((e) => (e.supersededAt === null ? { ...e, supersededAt: nowIso } : e)),
      { endpointId, url, secret, createdAt: nowIso, supersededAt: null },
    ])
  }

  /** Records a url change that issued no new secret: the current secret keeps serving the new url. */
  updateUrl(endpointId: string, url: string): void {
    this.#update((entries) => entries.map((e) => (e.endpointId === endpointId && e.supersededAt === null ? { ...e, url } : e)))
  }

  #update(change: (entries: readonly SecretEntry[]) => SecretEntry[]): void {
    this.#exclusive(() => {
      // Read afresh under the lock: another process may have written since our last read.
      this.#loaded = undefined
      const before = this.#entries()
      const after = change(before)
      if (JSON.stringify(after) === JSON.stringify(before)) return
      writeSecretsFile(this.file, after)
      this.#loaded = undefined
    })
  }

  #entries(): SecretEntry[] {
    const stamp = secretsFileStamp(this.file)
    if (this.#loaded !== undefined && this.#loaded.stamp === stamp) return this.#loaded.entries
    const entries = stamp === undefined ? [] : readSecretsFile(this.file)
    this.#loaded = { stamp, entries }
    return entries
  }
}

/** The secrets of `entries` accepted at `now`, newest first, labelled by endpoint (a file's, or those shared by the account's owner). */
export function activeSecretsOf(
  entries: readonly Pick<SecretEntry, 'endpointId' | 'secret' | 'supersededAt'>[],
  now: number,
  graceHours: number,
): ActiveSecret[] {
  return activeEntries(entries, now, graceHours).map((r) => ({
    secret: r.secret,
    label: `endpoint ${r.endpointId} (${r.supersededAt === null ? 'current' : 'previous'})`,
  }))
}

/** Newest first: the current entries and those whose grace period has not ended at `now`. */
function activeEntries<E extends Pick<SecretEntry, 'supersededAt'>>(entries: readonly E[], now: number, graceHours: number): E[] {
  const since = now - graceHours * HOUR_MS
  return entries.filter((e) => e.supersededAt === null || parseInstant(e.supersededAt) > since).reverse()
}

function endpointOf(e: SecretEntry): StoredEndpoint {
  return { endpointId: e.endpointId, url: e.url, createdAt: e.createdAt, supersededAt: e.supersededAt }
}

export interface SecretSourceOptions {
  /** FSM_WEBHOOK_SECRETS: the first is current, the rest still accepted. */
  envSecrets: readonly string[]
  store?: SecretStore | undefined
  graceHours: number
  now: () => number
}

/**
 * Every secret a delivery may be signed with, checked for each request: `webhooks register` runs
 * in another process while the daemon serves, and a delivery refused for a stale cache is lost.
 * The store answers from its cache unless the file's stamp changed or a grace period ended.
 */
export function secretSource(options: SecretSourceOptions): () => ActiveSecret[] {
  const env = options.envSecrets.map((secret, i) => ({ secret, label: `FSM_WEBHOOK_SECRETS#${i}` }))
  return () => {
    const stored = options.store?.active(options.now(), options.graceHours) ?? []
    const seen = new Set<string>()
    return [...env, ...stored].filter((s) => !seen.has(s.secret) && seen.add(s.secret))
  }
}
