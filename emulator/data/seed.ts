// Builds a whole account from a seed: same seed and anchor day, same data.
import { ObjectIdFactory, Prng } from '../core/prng.js'
import { clientSchema, objectDefinitions } from '../objects/object-definitions.js'
import { SchemaCache } from '../objects/schema-cache.js'
import { seedObjects } from './seed-objects.js'
import { seedClients, seedInvoices, seedJobs } from './seed-records.js'
import { seedReference } from './seed-reference.js'
import { anchorOf } from './seed-time.js'
import type { Counts, State } from './state.js'

export const DEFAULT_COUNTS: Counts = {
  clients: 50,
  jobs: 80,
  visitsPerJob: 0,
  invoices: 60,
  customRecords: 40,
  items: 25,
  taxes: 4,
  teamMembers: 8,
  jobForms: 5,
}

/** Reference data (items, taxes, team, job forms) that every account has whatever its size. */
const REFERENCE_ROWS = DEFAULT_COUNTS.items + DEFAULT_COUNTS.taxes + DEFAULT_COUNTS.teamMembers + DEFAULT_COUNTS.jobForms
/** Records the defaults give beside the reference data (clients, jobs and their visits, invoices, custom records). */
const DEFAULT_RECORD_ROWS = 488

/** Counts for an account of about `rows` records: the defaults' mix, scaled (the reference data stays). */
export function countsForRows(rows: number): Partial<Counts> {
  const scale = Math.max(0, rows - REFERENCE_ROWS) / DEFAULT_RECORD_ROWS
  const of = (n: number): number => Math.round(n * scale)
  return {
    clients: of(DEFAULT_COUNTS.clients),
    jobs: of(DEFAULT_COUNTS.jobs),
    invoices: of(DEFAULT_COUNTS.invoices),
    customRecords: of(DEFAULT_COUNTS.customRecords),
  }
}

export function seedState(seed: number, counts: Partial<Counts>, nowMs: number): State {
  const resolved: Counts = { ...DEFAULT_COUNTS, ...counts }
  const prng = new Prng(seed)
  const ids = new ObjectIdFactory(prng)
  const anchorMs = anchorOf(nowMs)
  const ref = seedReference(prng, ids, anchorMs, resolved)
  const teamIds = ref.team.all().map((t) => t.id)
  const ownerUserId = teamIds[0] ?? ids.make(anchorMs)
  const refs = {
    prng,
    ids,
    anchorMs,
    ownerUserId,
    teamIds,
    taxes: ref.taxes.all().map((t) => t.doc),
    jobFormIds: ref.jobForms.all().map((f) => f.id),
  }
  const clients = seedClients(refs, resolved.clients)
  const live = clients.all()
  // visitsPerJob 0 (the default) means "two or three per job"; a positive number is exact.
  const work = seedJobs(refs, live, resolved, resolved.visitsPerJob > 0)
  const invoices = seedInvoices(refs, live, resolved.invoices)
  const state: State = {
    seed,
    counts: resolved,
    prng,
    ids,
    ownerUserId,
    clients,
    jobs: work.jobs,
    visits: work.visits,
    visitsByJob: work.visitsByJob,
    invoices,
    objectDefs: objectDefinitions(),
    clientSchema: clientSchema(),
    schemaCache: new SchemaCache(),
    objects: new Map(),
    items: ref.items,
    taxes: ref.taxes,
    team: ref.team,
    jobForms: ref.jobForms,
    company: ref.company,
    next: { jobNumber: work.nextJobNumber, documentNumber: 2000 + resolved.invoices, customId: new Map() },
  }
  seedObjects(state, resolved.customRecords, anchorMs)
  return state
}

/** Number of records of every kind in the account (the seeding check counts these). */
export function recordCount(state: State): number {
  let n = state.clients.size + state.jobs.size + state.visits.size + state.invoices.size
  for (const c of state.objects.values()) n += c.size
  return n + state.items.size + state.taxes.size + state.team.size + state.jobForms.size
}
