// API keys (spec: API key; Authentication 1-3). Only a hash of each key is kept; the plaintext is
// returned once, at creation. Delete revokes permanently.
import { createHash, randomBytes } from 'node:crypto'
import type { Doc } from '../core/collection.js'
import { iso } from '../core/iso-time.js'

export const KEY_PREFIX = 'svc_live_'

export interface ApiKeyRecord {
  id: string
  name: string
  scopes: string[]
  expiresAt: string | null
  expiresMs: number | null
  lastUsedAt: string | null
  rateLimit: number | null
  isActive: boolean
  revoked: boolean
  createdAt: string
  createdBy: string
  hash: string
  keyPrefix: string
}

export interface NewKey {
  name: string
  scopes: string[]
  expiresMs?: number | null
  rateLimit?: number | null
  isActive?: boolean
  /** The plaintext to use instead of a random one (the emulator's stable default key). */
  key?: string
}

export interface TokenHolder {
  kind: 'support' | 'login'
  userId: string | null
}

export const hashOf = (key: string): string => createHash('sha256').update(key).digest('hex')

/** Told of every credential a store issues (keys and JWTs), so one server can tell whose it is. */
export type IssueListener = (credential: string) => void

export class KeyStore {
  private readonly byId = new Map<string, ApiKeyRecord>()
  private readonly byHash = new Map<string, ApiKeyRecord>()
  /**
   * JWTs accepted on legacy routes only (spec: Authentication 4 and 7): support-issued ones (no user:
   * they act as the account owner) and login tokens (their user). No expiry (lifetime: not shown).
   */
  private readonly tokens = new Map<string, TokenHolder>()

  constructor(
    private readonly newId: () => string,
    private readonly onIssue: IssueListener = () => {},
  ) {}

  create(input: NewKey, nowMs: number, createdBy: string): { record: ApiKeyRecord; key: string } {
    const key = input.key ?? `${KEY_PREFIX}${randomBytes(24).toString('hex')}`
    const expiresMs = input.expiresMs ?? null
    const record: ApiKeyRecord = {
      id: this.newId(),
      name: input.name,
      scopes: [...input.scopes],
      expiresAt: expiresMs === null ? null : iso(expiresMs),
      expiresMs,
      lastUsedAt: null,
      rateLimit: input.rateLimit ?? null,
      isActive: input.isActive ?? true,
      revoked: false,
      createdAt: iso(nowMs),
      createdBy,
      hash: hashOf(key),
      keyPrefix: `${key.slice(0, KEY_PREFIX.length + 4)}...`,
    }
    this.byId.set(record.id, record)
    this.byHash.set(record.hash, record)
    this.onIssue(key)
    return { record, key }
  }

  find(key: string): ApiKeyRecord | undefined {
    return this.byHash.get(hashOf(key))
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.byId.get(id)
  }

  all(): ApiKeyRecord[] {
    return [...this.byId.values()]
  }

  mintSupportToken(): string {
    return this.mintToken({ kind: 'support', userId: null })
  }

  /** A login JWT for a user (POST /api/auth/login, signup). */
  mintLoginToken(userId: string, email: string): string {
    return this.mintToken({ kind: 'login', userId }, { email })
  }

  tokenHolder(token: string): TokenHolder | undefined {
    return this.tokens.get(token)
  }

  private mintToken(holder: TokenHolder, claims: object = {}): string {
    const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url')
    const sub = holder.userId ?? 'support'
    const token = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub, kind: holder.kind, ...claims, jti: randomBytes(8).toString('hex') })}.${randomBytes(32).toString('base64url')}`
    this.tokens.set(token, holder)
    this.onIssue(token)
    return token
  }
}

/** Key metadata as the API returns it: never the plaintext or its hash. */
export function keyView(k: ApiKeyRecord): Doc {
  return {
    id: k.id,
    name: k.name,
    keyPrefix: k.keyPrefix,
    scopes: k.scopes,
    expiresAt: k.expiresAt,
    lastUsedAt: k.lastUsedAt,
    rateLimit: k.rateLimit,
    isActive: k.isActive && !k.revoked,
    createdAt: k.createdAt,
  }
}
