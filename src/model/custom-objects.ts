// What a custom object is once read (connectors/custom-objects.ts maps the payloads; the store keeps
// them in custom_object_types and builds each object's view from the fields).
import type { Payload } from './rows.js'

export interface DiscoveryItem {
  slug: string
  raw: Payload
}

export interface ObjectSchema {
  fields: { name: string; id?: string; label?: string; type?: string; relation?: { multi?: boolean } | null }[]
  pipeline: unknown
  raw: Payload
}
