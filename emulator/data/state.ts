// The whole mutable account: record collections, custom objects and reference data. Keys, webhook
// endpoints and integrations live beside it in the emulator (they survive a data reset).
import type { Collection, Doc } from '../core/collection.js'
import type { ObjectIdFactory, Prng } from '../core/prng.js'
import type { ObjectDef } from '../objects/object-definitions.js'
import type { SchemaCache } from '../objects/schema-cache.js'

export interface JobInternal {
  targetObjectSlug?: string
  targetRecordId?: string
}

/** A signature captured on an invoice in the app (an emulator assumption, see emulator/README.md). */
export interface SignatureBlock {
  role: 'client' | 'technician'
  name: string
  signedAt: string
}

export interface InvoiceInternal {
  /** Minted once, returned identically afterwards (spec: Invoices, payment-link). */
  paymentLink?: Doc
  /** Only the single-invoice response carries them (spec: Invoice, "captured signature blocks"). */
  signatures?: SignatureBlock[]
}

export interface ObjectRecordInternal {
  /** Accepted, never returned (spec: Custom objects, `linkedRecords`). */
  linkedRecords: unknown[] | null
}

export interface Counts {
  clients: number
  jobs: number
  visitsPerJob: number
  invoices: number
  customRecords: number
  items: number
  taxes: number
  teamMembers: number
  jobForms: number
}

export interface State {
  seed: number
  counts: Counts
  prng: Prng
  ids: ObjectIdFactory
  /** The account owner: `createdBy` of API writes and the user API keys authenticate as on legacy routes. */
  ownerUserId: string
  clients: Collection<null>
  jobs: Collection<JobInternal>
  visits: Collection<null>
  /** Visit ids per job id, in creation order. */
  visitsByJob: Map<string, string[]>
  invoices: Collection<InvoiceInternal>
  objectDefs: ObjectDef[]
  clientSchema: ObjectDef
  /** What the v1 routes see of `objectDefs`/`clientSchema` fields (the five-minute cache). */
  schemaCache: SchemaCache
  objects: Map<string, Collection<ObjectRecordInternal>>
  items: Collection<null>
  taxes: Collection<null>
  team: Collection<null>
  jobForms: Collection<null>
  company: Doc
  next: { jobNumber: number; documentNumber: number; customId: Map<string, number> }
}
