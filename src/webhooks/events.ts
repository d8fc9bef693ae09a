// The seventeen subscribable events (spec, Events: "exactly seventeen") and the stream each one
// touches, for registration, the processor and delivery-gap sweeps.

export const WEBHOOK_EVENTS = [
  'client.created',
  'client.updated',
  'client.deleted',
  'job.created',
  'job.updated',
  'job.status_changed',
  'job.deleted',
  'visit.status_changed',
  'visit.updated',
  'invoice.created',
  'invoice.updated',
  'invoice.paid',
  'invoice.deleted',
  'object.created',
  'object.updated',
  'object.stage_changed',
  'object.deleted',
] as const

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number]

const STREAM_OF_RESOURCE: Readonly<Record<string, string>> = {
  client: 'clients',
  job: 'jobs',
  visit: 'visits',
  invoice: 'invoices',
  // One stream for every custom object: the delivery records do not carry the payload's slug.
  object: 'objects',
}

export function isWebhookEvent(name: string): name is WebhookEvent {
  return (WEBHOOK_EVENTS as readonly string[]).includes(name)
}

/** The stream (as `--stream` names it) an event belongs to, or undefined for an unknown name. */
export function streamOfEvent(event: string): string | undefined {
  if (!isWebhookEvent(event)) return undefined
  return STREAM_OF_RESOURCE[event.slice(0, event.indexOf('.'))]
}
