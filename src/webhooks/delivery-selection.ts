// Which deliveries the mirror applies: those of the streams `streams` selects (the config's list,
// also what a bare `sync` and the daemon's sweeps run). A delivery for another stream is still
// acknowledged and kept (an error answer would make the sender disable the endpoint) but recorded
// as skipped; `objects:<slug>` selects one custom object, so `object.*` for another slug is skipped.
// Pure: names in, predicates out; the names are read by the one selection of connectors/selection.ts.
import { selects, selectStreams } from '../../connectors/selection.js'

export interface DeliverySelection {
  /** The stream of this name is selected (the custom-object stream: when any custom object is). */
  stream(name: string): boolean
  /** Some custom object is selected (`objects` or any `objects:<slug>`). */
  readonly objects: boolean
  /** This custom object's deliveries are applied. */
  object(slug: string): boolean
}

export const ALL_DELIVERIES: DeliverySelection = { stream: () => true, objects: true, object: () => true }

export function deliverySelection(names: readonly string[] | undefined): DeliverySelection {
  if (names === undefined) return ALL_DELIVERIES
  const selection = selectStreams(names)
  const objects = selection.objects
  return {
    stream: (name) => selects(selection, name),
    objects: objects !== undefined,
    object: (slug) => objects === 'all' || (objects?.includes(slug) ?? false),
  }
}

/** Why a delivery was skipped, as `webhook_inbox.skipped` records it. */
export function notSelected(what: string): string {
  return `${what} is not selected in the config's streams: acknowledged and kept, not applied`
}
