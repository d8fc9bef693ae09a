// Account metadata (spec: Webhook management; API keys): what the account has registered, never a
// secret. Any key that could hold a secret or a plaintext key is dropped from the stored payload.
import type { RecordRow, SqlValue } from '../src/store/record-writer.js'
import { canonicalTimeOrText } from '../src/store/timestamps.js'
import { flag, integer, json, real, text, time, type Payload } from './mapping.js'

const SECRET_KEYS = /^(secret|signingSecret|key|apiKey|plaintext|plainTextKey|token|hash|keyHash)$/i

/** The payload without any field that could hold a secret (recursively). */
export function withoutSecrets(p: Payload): Payload {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(p)) {
    if (SECRET_KEYS.test(k)) continue
    out[k] = typeof v === 'object' && v !== null && !Array.isArray(v) ? withoutSecrets(v as Payload) : v
  }
  return out
}

export interface MetadataStream {
  name: string
  route: string
  table: string
  scope: string | undefined
  columns: (p: Payload) => Record<string, SqlValue>
}

export function metadataRow(stream: MetadataStream, raw: Payload, extra: Record<string, SqlValue> = {}): RecordRow | undefined {
  const p = withoutSecrets(raw)
  const id = text(p.id) ?? text(p._id)
  if (id === null) return undefined
  return {
    id,
    updated_at: canonicalTimeOrText(p.updatedAt) ?? '',
    raw: JSON.stringify(p),
    columns: { created_at: canonicalTimeOrText(p.createdAt), ...stream.columns(p), ...extra },
  }
}

export const webhookEndpoints: MetadataStream = {
  name: 'webhooks',
  route: '/api/v1/webhooks',
  table: 'webhook_endpoints',
  scope: 'webhooks:manage',
  columns: (p) => ({
    url: text(p.url),
    events: json(p.events),
    description: text(p.description),
    is_active: flag(p.isActive),
    metadata: json(p.metadata),
  }),
}

export const webhookDeliveries: MetadataStream = {
  name: 'webhooks',
  route: '/api/v1/webhooks/{id}/deliveries',
  table: 'webhook_deliveries',
  scope: 'webhooks:manage',
  columns: (p) => ({
    event: text(p.event),
    status: text(p.status),
    attempts: integer(p.attempts),
    response_code: integer(p.responseCode),
    error_message: text(p.errorMessage),
    duration: real(p.duration),
    last_attempt_at: time(p.lastAttemptAt),
  }),
}

export const apiKeys: MetadataStream = {
  name: 'api_keys',
  route: '/api/v1/api-keys',
  table: 'api_keys',
  scope: undefined,
  columns: (p) => ({
    name: text(p.name),
    scopes: json(p.scopes),
    expires_at: time(p.expiresAt),
    last_used_at: time(p.lastUsedAt),
    is_active: flag(p.isActive),
  }),
}
