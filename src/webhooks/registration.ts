// Endpoint registration (spec, Webhook management): POST creates the endpoint for all seventeen
// events and returns its secret once; a PUT that changes the url issues a new secret, and the
// previous one stays accepted for webhooks.rotationGraceHours (secret-store.ts). Also the reads
// behind `webhooks list` and `webhooks deliveries`.
import { z } from 'zod'
import { NotFoundError, pageWalk, type ApiClient } from '../api/index.js'
import type { SecretStore } from './secret-store.js'
import { WEBHOOK_EVENTS } from './events.js'

export class WebhookRegistrationError extends Error {
  readonly code = 'WEBHOOK_REGISTRATION_FAILED' as const
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'WebhookRegistrationError'
  }
}

export type RegistrationClient = Pick<ApiClient, 'get' | 'post' | 'put'>

const ROUTE = '/api/v1/webhooks'

export const EndpointSchema = z.looseObject({
  id: z.string().min(1),
  url: z.string(),
  events: z.array(z.string()).optional(),
  isActive: z.boolean().optional(),
  description: z.string().nullish(),
  secret: z.string().min(1).optional(),
})
/** An endpoint as listed; the secret is never part of it. */
export type EndpointView = Pick<z.infer<typeof EndpointSchema>, 'id' | 'url' | 'events' | 'isActive' | 'description'>

export const DeliverySchema = z.looseObject({
  id: z.string().min(1),
  event: z.string(),
  status: z.string(),
  attempts: z.number().nullish(),
  responseCode: z.number().nullish(),
  errorMessage: z.string().nullish(),
  duration: z.number().nullish(),
  createdAt: z.string().nullish(),
  lastAttemptAt: z.string().nullish(),
})
export type DeliveryRecord = z.infer<typeof DeliverySchema>

export const DELIVERY_STATUSES = ['pending', 'success', 'failed', 'retrying'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

export interface RegisterResult {
  action: 'created' | 'updated' | 'unchanged' | 'recreated'
  endpointId: string
  url: string
  /** A new secret was issued and stored; the previous one is accepted for the grace period. */
  rotated: boolean
}

const DESCRIPTION = 'fsm-sync mirror (all events; sweeps remain the source of truth)'

export async function registerEndpoint(
  client: RegistrationClient,
  store: SecretStore,
  url: string,
  now: () => number,
): Promise<RegisterResult> {
  const current = store.current()
  if (current !== undefined) {
    let data: unknown
    try {
      // Events and isActive are sent again so a re-run also repairs an endpoint edited elsewhere.
      data = (
        await client.put(
          `${ROUTE}/${encodeURIComponent(current.endpointId)}`,
          { url, events: WEBHOOK_EVENTS, isActive: true },
          { priority: 'sweep' },
        )
      ).data
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err
      // Deleted upstream: create a new endpoint; its secret supersedes the old one.
      return { ...(await create(client, store, url, now)), action: 'recreated' }
    }
    const endpoint = parseEndpoint(data, 'PUT')
    if (endpoint.secret !== undefined) {
      store.record(endpoint.id, url, endpoint.secret, new Date(now()).toISOString())
      return { action: 'updated', endpointId: endpoint.id, url, rotated: true }
    }
    // No new secret: the upstream url did not change (spec: only a url change issues one).
    store.updateUrl(current.endpointId, url)
    return { action: url === current.url ? 'unchanged' : 'updated', endpointId: current.endpointId, url, rotated: false }
  }
  return create(client, store, url, now)
}

async function create(client: RegistrationClient, store: SecretStore, url: string, now: () => number): Promise<RegisterResult> {
  // No retry of a create (api-client.ts); a failure here leaves nothing stored locally.
  const res = await client.post(ROUTE, { url, events: WEBHOOK_EVENTS, description: DESCRIPTION, isActive: true }, { priority: 'sweep' })
  const endpoint = parseEndpoint(res.data, 'POST')
  if (endpoint.secret === undefined) {
    throw new WebhookRegistrationError(
      `POST ${ROUTE} created endpoint ${endpoint.id} but returned no signing secret; delete it in the account settings and register again`,
    )
  }
  store.record(endpoint.id, url, endpoint.secret, new Date(now()).toISOString())
  return { action: 'created', endpointId: endpoint.id, url, rotated: false }
}

export async function listEndpoints(client: Pick<ApiClient, 'get'>, signal?: AbortSignal): Promise<EndpointView[]> {
  const out: EndpointView[] = []
  for await (const page of pageWalk(client, ROUTE, { priority: 'sweep', ...(signal ? { signal } : {}) })) {
    for (const row of page.rows) {
      const e = parseEndpoint(row, 'GET')
      // Only named fields: the secret is never carried further, even if a list ever held it.
      out.push({ id: e.id, url: e.url, events: e.events, isActive: e.isActive, description: e.description })
    }
  }
  return out
}

export async function listDeliveries(
  client: Pick<ApiClient, 'get'>,
  endpointId: string,
  options: { status?: DeliveryStatus | undefined; max?: number; signal?: AbortSignal | undefined } = {},
): Promise<DeliveryRecord[]> {
  const out: DeliveryRecord[] = []
  const max = options.max ?? Number.POSITIVE_INFINITY
  const walk = pageWalk(client, `${ROUTE}/${encodeURIComponent(endpointId)}/deliveries`, {
    priority: 'sweep',
    ...(options.status === undefined ? {} : { query: { status: options.status } }),
    ...(options.signal ? { signal: options.signal } : {}),
  })
  for await (const page of walk) {
    for (const row of page.rows) {
      const parsed = DeliverySchema.safeParse(row)
      if (parsed.success) out.push(parsed.data)
      if (out.length >= max) return out
    }
  }
  return out
}

function parseEndpoint(data: unknown, method: string): z.infer<typeof EndpointSchema> {
  const parsed = EndpointSchema.safeParse(data)
  // Issue paths only, never the data itself: the record may carry the secret.
  if (!parsed.success)
    throw new WebhookRegistrationError(
      `${method} ${ROUTE} answered without an endpoint record (id, url): ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
    )
  return parsed.data
}
