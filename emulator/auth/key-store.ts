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
}

const hashOf = (key: string): string => createHash('sha256').update(key).digest('hex')

export class KeyStore {
  private readonly byId = new Map<string, ApiKeyRecord>()
  private readonly byHash = new Map<string, ApiKeyRecord>()
  /** Support-issued JWTs: accepted on legacy routes only (spec: Authentication 7). */
  private readonly supportTokens = new Set<string>()

  constructor(private readonly newId: () => string) {}

  create(input: NewKey, nowMs: number, createdBy: string): { record: ApiKeyRecord; key: string } {
    const key = `${KEY_PREFIX}${randomBytes(24).toString('hex')}`
    const expiresMs = input.expiresMs ?? null
    const record: ApiKeyRecord = {
      id: this.newId(), name: input.name, scopes: [...input.scopes], expiresAt: expiresMs === null ? null : iso(expiresMs), expiresMs,
      lastUsedAt: null, rateLimit: input.rateLimit ?? null, isActive: input.isActive ?? true, revoked: false, createdAt: iso(nowMs), createdBy,
      hash: hashOf(key), keyPrefix: `${key.slice(0, KEY_PREFIX.length + 4)}...`,
    }
    this.byId.set(record.id, record)
    this.byHash.set(record.hash, record)
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
    const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url')
    const token = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: 'support', jti: randomBytes(8).toString('hex') })}.${randomBytes(32).toString('base64url')}`
    this.supportTokens.add(token)
    return token
  }

  isSupportToken(token: string): boolean {
    return this.supportTokens.has(token)
  }
}

/** Key metadata as the API returns it: never the plaintext or its hash. */
export function keyView(k: ApiKeyRecord): Doc {
  return {
    id: k.id, name: k.name, keyPrefix: k.keyPrefix, scopes: k.scopes, expiresAt: k.expiresAt, lastUsedAt: k.lastUsedAt,
    rateLimit: k.rateLimit, isActive: k.isActive && !k.revoked, createdAt: k.createdAt,
  }
}
