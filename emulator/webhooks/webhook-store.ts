// Webhook endpoints and their delivery records (spec: Webhook endpoint and delivery).
import type { Doc } from '../core/collection.js'

export interface Endpoint {
  id: string
  url: string
  events: string[]
  description: string
  isActive: boolean
  metadata: unknown
  secret: string
  createdAt: string
  updatedAt: string
}

export type DeliveryStatus = 'pending' | 'success' | 'failed' | 'retrying'

export interface Delivery {
  id: string
  endpointId: string
  event: string
  status: DeliveryStatus
  attempts: number
  responseCode: number | null
  errorMessage: string | null
  duration: number | null
  createdAt: string
  createdMs: number
  lastAttemptAt: string | null
  nextAttemptAt: string | null
}

export class WebhookStore {
  readonly endpoints = new Map<string, Endpoint>()
  readonly deliveries = new Map<string, Delivery>()

  deliveriesOf(endpointId: string): Delivery[] {
    return [...this.deliveries.values()].filter((d) => d.endpointId === endpointId)
  }

  remove(endpointId: string): void {
    this.endpoints.delete(endpointId)
    for (const d of this.deliveriesOf(endpointId)) this.deliveries.delete(d.id)
  }

  clear(): void {
    this.endpoints.clear()
    this.deliveries.clear()
  }
}

/** The endpoint record; the secret only when it was just generated (spec: "shown once"). */
export function endpointView(e: Endpoint, withSecret: boolean): Doc {
  const view: Doc = {
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    isActive: e.isActive,
    metadata: e.metadata,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
  }
  if (withSecret) view.secret = e.secret
  return view
}

/** The delivery record: no payload and no response body (spec: Delivery record). */
export function deliveryView(d: Delivery): Doc {
  return {
    id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    responseCode: d.responseCode,
    errorMessage: d.errorMessage,
    duration: d.duration,
    createdAt: d.createdAt,
    lastAttemptAt: d.lastAttemptAt,
    nextAttemptAt: d.nextAttemptAt,
  }
}
