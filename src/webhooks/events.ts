// The subscribable events and the stream each one touches, for registration, the processor and
// delivery-gap sweeps, derived from what the streams of connectors/index.ts declare (their
// snapshot, deletion and status events). The spec lists exactly seventeen; so do the declarations
// (test/unit/webhooks/events.test.ts).
import { STREAMS } from '../../connectors/index.js'
import type { StreamDeclaration } from '../model/streams.js'

/** The events a stream is kept current by, as its declaration says. */
export function eventsOf(stream: StreamDeclaration): readonly string[] {
  switch (stream.kind) {
    case 'records':
      return [...stream.snapshotEvents, ...(stream.statusEvent === undefined ? [] : [stream.statusEvent.event]), ...stream.deletions.events]
    case 'objects':
      return [...stream.snapshotEvents, ...stream.deletions.events]
    default:
      return []
  }
}

// One stream for every custom object: the delivery records do not carry the payload's slug.
const STREAM_OF_EVENT: ReadonlyMap<string, string> = new Map(STREAMS.flatMap((s) => eventsOf(s).map((e) => [e, s.name] as const)))

/** Every event the mirror subscribes to, in registry order. */
export const WEBHOOK_EVENTS: readonly string[] = [...STREAM_OF_EVENT.keys()]

export function isWebhookEvent(name: string): boolean {
  return STREAM_OF_EVENT.has(name)
}

/** The stream (as `--stream` names it) an event belongs to, or undefined for an unknown name. */
export function streamOfEvent(event: string): string | undefined {
  return STREAM_OF_EVENT.get(event)
}
