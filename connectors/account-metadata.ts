// Account metadata (spec: Webhook management; API keys): what the account has registered, never a
// secret. Any key that could hold a secret or a plaintext key is dropped from the stored payload.
import type { Payload, RecordRow, SqlCell } from '../src/model/rows.js'
import type { MetadataListing, MetadataStream } from '../src/model/streams.js'
import { col, compileColumns, recordTable, type MappedColumn } from './columns.js'
import { lenientRow } from './define-stream.js'
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

type ListingDefinition = Omit<MetadataListing, 'tables' | 'mapColumns'> & { description: string; columns: readonly MappedColumn[] }

function defineListing({ description, columns, ...listing }: ListingDefinition): MetadataListing {
  const table = recordTable(listing.table, description, columns)
  return { ...listing, tables: [table], mapColumns: compileColumns(table) }
}

/** The row of a payload, without its secrets; `extra` sets the columns fsm-sync fills itself. */
export function metadataRow(stream: MetadataListing, raw: Payload, extra: Record<string, SqlCell> = {}): RecordRow | undefined {
  const p = withoutSecrets(raw)
  const id = text(p.id) ?? text(p._id)
  if (id === null) return undefined
  return lenientRow(id, p, { ...stream.mapColumns(p), ...extra })
}

const IS_ACTIVE = col('is_active', 'flag', 'isActive', 'Active.')

export const webhookEndpoints = defineListing({
  route: '/api/v1/webhooks',
  table: 'webhook_endpoints',
  description: 'A webhook endpoint registered on the account (never its signing secret).',
  columns: [
    col('url', 'text', 'url', 'The URL deliveries are sent to.'),
    col('events', 'json', 'events', 'The subscribed events as a JSON array.'),
    col('description', 'text', 'description', 'Description.'),
    IS_ACTIVE,
    col('metadata', 'json', 'metadata', 'Free-form metadata as JSON (secrets removed).'),
  ],
})

export const webhookDeliveries = defineListing({
  route: '/api/v1/webhooks/{id}/deliveries',
  table: 'webhook_deliveries',
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

export const apiKeys = defineListing({
  route: '/api/v1/api-keys',
  table: 'api_keys',
  description: "An API key's metadata (never the key itself).",
  columns: [
    col('name', 'text', 'name', 'Name.'),
    col('scopes', 'json', 'scopes', 'Granted scopes as a JSON array.'),
    col('expires_at', 'time', 'expiresAt', 'When the key expires.'),
    col('last_used_at', 'time', 'lastUsedAt', 'When the key was last used.'),
    IS_ACTIVE,
  ],
})

/** `webhooks`: the endpoints (a paged, complete listing) and each endpoint's delivery records. */
export const webhooks: MetadataStream = {
  kind: 'metadata',
  name: 'webhooks',
  scope: 'webhooks:manage',
  list: { ...webhookEndpoints, paged: true },
  perRecord: {
    ...webhookDeliveries,
    routeOf: (id) => `/api/v1/webhooks/${encodeURIComponent(id)}/deliveries`,
    parentColumn: 'endpoint_id',
  },
  tables: [...webhookEndpoints.tables, ...webhookDeliveries.tables],
}

/** `api_keys`: one request lists every key. */
export const apiKeyMetadata: MetadataStream = {
  kind: 'metadata',
  name: 'api_keys',
  scope: undefined,
  list: { ...apiKeys, paged: false },
  tables: apiKeys.tables,
}
