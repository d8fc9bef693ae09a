// Account metadata (spec: Webhook management; API keys): what the account has registered, never a
// secret. Any key that could hold a secret or a plaintext key is dropped from the stored payload.
import type { Payload, RecordRow, SqlValue } from '../src/model/rows.js'
import { canonicalTimeOrText } from '../src/model/timestamps.js'
import { col, compileColumns, recordTable, type MappedColumn, type MappedTable } from './columns.js'
import { text } from './mapping.js'

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
  /** The stream's one table as declared. */
  tables: readonly [MappedTable]
  /** The table's own columns of a payload (compiled from the declaration). */
  mapColumns: (p: Payload) => Record<string, SqlValue>
}

type MetadataDefinition = Omit<MetadataStream, 'tables' | 'mapColumns'> & { description: string; columns: readonly MappedColumn[] }

function defineMetadata({ description, columns, ...stream }: MetadataDefinition): MetadataStream {
  const table = recordTable(stream.table, description, columns)
  return { ...stream, tables: [table], mapColumns: compileColumns(table) }
}

/** The row of a payload, without its secrets; `extra` sets the columns fsm-sync fills itself. */
export function metadataRow(stream: MetadataStream, raw: Payload, extra: Record<string, SqlValue> = {}): RecordRow | undefined {
  const p = withoutSecrets(raw)
  const id = text(p.id) ?? text(p._id)
  if (id === null) return undefined
  return {
    id,
    updated_at: canonicalTimeOrText(p.updatedAt) ?? '',
    raw: JSON.stringify(p),
    columns: { created_at: canonicalTimeOrText(p.createdAt), ...stream.mapColumns(p), ...extra },
  }
}

const IS_ACTIVE = col('is_active', 'flag', 'isActive', 'Active.')

export const webhookEndpoints: MetadataStream = defineMetadata({
  name: 'webhooks',
  route: '/api/v1/webhooks',
  table: 'webhook_endpoints',
  scope: 'webhooks:manage',
  description: 'A webhook endpoint registered on the account (never its signing secret).',
  columns: [
    col('url', 'text', 'url', 'The URL deliveries are sent to.'),
    col('events', 'json', 'events', 'The subscribed events as a JSON array.'),
    col('description', 'text', 'description', 'Description.'),
    IS_ACTIVE,
    col('metadata', 'json', 'metadata', 'Free-form metadata as JSON (secrets removed).'),
  ],
})

export const webhookDeliveries: MetadataStream = defineMetadata({
  name: 'webhooks',
  route: '/api/v1/webhooks/{id}/deliveries',
  table: 'webhook_deliveries',
  scope: 'webhooks:manage',
  description: 'A delivery attempt record of a webhook endpoint, kept as history.',
  columns: [
    col('endpoint_id', 'text', undefined, 'The endpoint the delivery belongs to (webhook_endpoints.id), from the route it was listed on.'),
    col('event', 'text', 'event', 'The event delivered.'),
    col('status', 'text', 'status', 'pending, success, failed or retrying.'),
    col('attempts', 'integer', 'attempts', 'Attempts made.'),
    col('response_code', 'integer', 'responseCode', 'HTTP status of the last attempt.'),
    col('error_message', 'text', 'errorMessage', 'Error of the last attempt.'),
    col('duration', 'real', 'duration', 'Duration of the last attempt.'),
    col('last_attempt_at', 'time', 'lastAttemptAt', 'When the last attempt was made.'),
  ],
})

export const apiKeys: MetadataStream = defineMetadata({
  name: 'api_keys',
  route: '/api/v1/api-keys',
  table: 'api_keys',
  scope: undefined,
  description: "An API key's metadata (never the key itself).",
  columns: [
    col('name', 'text', 'name', 'Name.'),
    col('scopes', 'json', 'scopes', 'Granted scopes as a JSON array.'),
    col('expires_at', 'time', 'expiresAt', 'When the key expires.'),
    col('last_used_at', 'time', 'lastUsedAt', 'When the key was last used.'),
    IS_ACTIVE,
  ],
})
