// The seeded clients, jobs (with visits) and invoices (with line items and taxes).
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { iso } from '../core/iso-time.js'
import type { ObjectIdFactory, Prng } from '../core/prng.js'
import { ACCOUNT_TIMEZONE, CLIENT_STAGES } from './account-config.js'
import { clientDisplayName, shape } from './docs.js'
import { phoneNumber } from './seed-reference.js'
import { DAY_MS, seededTimes } from './seed-time.js'
import type { Counts, InvoiceInternal, JobInternal } from './state.js'
import { CITIES, COMPANY_KINDS, COMPANY_WORDS, FIRST_NAMES, JOB_NOTES, LAST_NAMES, SERVICES, STREETS } from './word-lists.js'

export function detailedAddress(prng: Prng): Doc {
  const [city, state, zipCode, lat, lng] = prng.pick(CITIES)
  const houseNumber = String(prng.int(100, 9999))
  const street = `${houseNumber} ${prng.pick(STREETS)}`
  return {
    street,
    city,
    state,
    country: 'US',
    zipCode,
    formattedAddress: `${street}, ${city}, ${state} ${zipCode}, US`,
    houseNumber,
    plusCode: '',
    latitude: Math.round((lat + (prng.next() - 0.5) / 10) * 1e6) / 1e6,
    longitude: Math.round((lng + (prng.next() - 0.5) / 10) * 1e6) / 1e6,
  }
}

interface Refs {
  prng: Prng
  ids: ObjectIdFactory
  anchorMs: number
  ownerUserId: string
  teamIds: string[]
  taxes: Doc[]
  jobFormIds: string[]
}

export function seedClients(r: Refs, n: number): Collection<null> {
  const clients = new Collection<null>()
  for (let i = 0; i < n; i++) {
    const { prng } = r
    const { createdMs, updatedMs } = seededTimes(prng, r.anchorMs)
    const id = r.ids.make(createdMs)
    const firstName = prng.pick(FIRST_NAMES)
    const lastName = prng.pick(LAST_NAMES)
    const commercial = prng.chance(0.3)
    const address = detailedAddress(prng)
    const doc = shape('client', {
      id,
      recordId: prng.uuid(),
      firstName,
      lastName,
      email: `${firstName}.${lastName}${i}@example.com`.toLowerCase().replace(/[^a-z0-9.@]/g, ''),
      phoneNumber: phoneNumber(prng),
      companyName: commercial ? `${prng.pick(COMPANY_WORDS)} ${prng.pick(COMPANY_KINDS)}` : '',
      propertyAddress: address,
      billingAddress: prng.chance(0.8) ? address : detailedAddress(prng),
      companyAddress: commercial ? detailedAddress(prng) : null,
      clientType: commercial ? 'Commercial' : 'Residential',
      stage: prng.pick(CLIENT_STAGES),
      status: 'active',
      taxNumber: commercial ? `TX${prng.int(10000000, 99999999)}` : '',
      website: commercial ? `https://client${i}.example.com` : '',
      notes: prng.chance(0.3) ? prng.pick(JOB_NOTES) : '',
      notificationPreferences: { email: true, sms: prng.chance(0.5) },
      preferredTechnicianIds: prng.sample(r.teamIds, prng.int(0, 2)),
      jobFormIds: prng.sample(r.jobFormIds, prng.int(0, 1)),
      properties: prng.chance(0.5)
        ? [
            { id: '66b000000000000000000001', value: String(prng.int(1000, 9999)) },
            { id: '66b000000000000000000002', value: prng.pick(['google', 'referral', 'yard_sign', 'repeat']) },
          ]
        : [],
      createdBy: r.ownerUserId,
      createdAt: iso(createdMs),
      updatedAt: iso(updatedMs),
    })
    clients.insert(id, doc, createdMs, updatedMs, null)
  }
  return clients
}

/** Job status and visit statuses consistent with the job's time window relative to the anchor. */
function plan(
  prng: Prng,
  startMs: number,
  anchorMs: number,
  visits: number,
): { jobStatus: string; scheduleLater: boolean; statuses: string[] } {
  if (prng.chance(0.08)) return { jobStatus: 'draft', scheduleLater: true, statuses: Array<string>(visits).fill('unscheduled') }
  if (startMs < anchorMs - 3 * DAY_MS) {
    const statuses = Array.from({ length: visits }, () => (prng.chance(0.1) ? 'cancelled' : 'completed'))
    return { jobStatus: prng.pick(['completed', 'completed', 'invoiced', 'paid', 'closed']), scheduleLater: false, statuses }
  }
  if (startMs < anchorMs + DAY_MS) {
    const statuses = Array.from({ length: visits }, (_, k) =>
      k === 0 ? prng.pick(['in_progress', 'arrived', 'in_transit', 'completed']) : 'scheduled',
    )
    return { jobStatus: 'in-progress', scheduleLater: false, statuses }
  }
  return { jobStatus: prng.chance(0.1) ? 'on-hold' : 'scheduled', scheduleLater: false, statuses: Array<string>(visits).fill('scheduled') }
}

export function seedJobs(r: Refs, clients: StoredRecord<null>[], counts: Pick<Counts, 'jobs' | 'visitsPerJob'>, fixedVisits: boolean) {
  const jobs = new Collection<JobInternal>()
  const visits = new Collection<null>()
  const visitsByJob = new Map<string, string[]>()
  const { prng } = r
  for (let i = 0; i < counts.jobs && clients.length > 0; i++) {
    const client = prng.pick(clients)
    const { createdMs, updatedMs } = seededTimes(prng, r.anchorMs)
    const id = r.ids.make(createdMs)
    const startMs = r.anchorMs + Math.floor((prng.next() - 0.6) * 56) * DAY_MS + prng.int(7, 16) * 3_600_000
    const hours = prng.int(1, 4)
    const nVisits = fixedVisits ? counts.visitsPerJob : prng.int(2, 3)
    const p = plan(prng, startMs, r.anchorMs, nVisits)
    const team = prng.sample(r.teamIds, prng.int(1, 2))
    const visitIds: string[] = []
    const summary: Doc[] = []
    for (let k = 0; k < nVisits; k++) {
      const vStart = startMs + k * 7 * DAY_MS
      const vCreated = createdMs + k
      const vUpdated = Math.max(vCreated, updatedMs - prng.int(0, 3_600_000))
      const vid = r.ids.make(vCreated)
      const status = p.statuses[k] ?? 'scheduled'
      const scheduled = status !== 'unscheduled'
      visits.insert(
        vid,
        shape('visit', {
          id: vid,
          jobId: id,
          visitStartDateTime: scheduled ? iso(vStart) : null,
          visitEndDateTime: scheduled ? iso(vStart + hours * 3_600_000) : null,
          visitStatus: status,
          teamId: team,
          serviceDuration: hours * 60,
          anyTime: false,
          notes: prng.chance(0.3) ? prng.pick(JOB_NOTES) : '',
          priority: 'medium',
          actualEndTime: status === 'completed' ? iso(Math.min(vStart + hours * 3_600_000, vUpdated)) : null,
          createdAt: iso(vCreated),
          updatedAt: iso(vUpdated),
        }),
        vCreated,
        vUpdated,
        null,
      )
      visitIds.push(vid)
      summary.push({ id: vid, visitStatus: status })
    }
    visitsByJob.set(id, visitIds)
    const subTotal = prng.int(8, 200) * 10
    const tax = Math.round(subTotal * 0.0825 * 100) / 100
    jobs.insert(
      id,
      shape('job', {
        id,
        recordId: prng.uuid(),
        jobNumber: `J${String(1000 + i)}`,
        clientId: client.id,
        clientName: clientDisplayName(client.doc),
        jobPhone: client.doc.phoneNumber ?? null,
        jobAddress: client.doc.propertyAddress ?? null,
        assignedToTeams: team,
        jobType: prng.chance(0.85) ? 'one-off' : 'recurring',
        jobStatus: p.jobStatus,
        startDateTime: p.scheduleLater ? null : iso(startMs),
        endDateTime: p.scheduleLater ? null : iso(startMs + hours * 3_600_000),
        timezone: ACCOUNT_TIMEZONE,
        scheduleLater: p.scheduleLater,
        anyTime: prng.chance(0.1),
        priority: prng.pick(['low', 'medium', 'medium', 'high', 'critical']),
        subTotal,
        discount: 0,
        tax,
        total: subTotal + tax,
        notes: prng.chance(0.5) ? prng.pick(JOB_NOTES) : '',
        visits: summary,
        properties: [],
        createdBy: r.ownerUserId,
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      }),
      createdMs,
      updatedMs,
      {},
    )
  }
  return { jobs, visits, visitsByJob, nextJobNumber: 1000 + counts.jobs }
}

export function seedInvoices(r: Refs, clients: StoredRecord<null>[], n: number): Collection<InvoiceInternal> {
  const invoices = new Collection<InvoiceInternal>()
  const { prng } = r
  for (let i = 0; i < n && clients.length > 0; i++) {
    const client = prng.pick(clients)
    const { createdMs, updatedMs } = seededTimes(prng, r.anchorMs)
    const id = r.ids.make(createdMs)
    const lines = Array.from({ length: prng.int(1, 4) }, () => {
      const [name, type, rate] = prng.pick(SERVICES)
      const quantity = type === 'Service' ? 1 : prng.int(1, 4)
      const tax = prng.pick(r.taxes)
      const taxRate = typeof tax.rate === 'number' ? tax.rate : 0
      const taxAmount = Math.round(quantity * rate * taxRate) / 100
      return {
        itemId: null,
        name,
        description: `${type}: ${name}`,
        quantity,
        rate,
        taxes: [{ taxId: tax.id, taxName: tax.name, taxRate, taxAmount, taxType: 1 }],
      }
    })
    const subTotal = Math.round(lines.reduce((s, l) => s + l.quantity * l.rate, 0) * 100) / 100
    const taxTotal = lines.reduce((s, l) => s + (l.taxes[0]?.taxAmount ?? 0), 0)
    const total = Math.round((subTotal + taxTotal) * 100) / 100
    const dueMs = createdMs + 30 * DAY_MS
    const paid = prng.chance(0.45)
    const status = paid ? 'paid' : dueMs < r.anchorMs ? 'overdue' : prng.chance(0.2) ? 'partial' : 'unpaid'
    const paidAmount = status === 'paid' ? total : status === 'partial' ? Math.round(total * 0.3 * 100) / 100 : 0
    invoices.insert(
      id,
      shape('invoice', {
        id,
        recordId: prng.uuid(),
        documentNumber: `INV-${String(2000 + i).padStart(5, '0')}`,
        clientId: client.id,
        title: `Invoice for ${clientDisplayName(client.doc)}`,
        date: iso(createdMs).slice(0, 10),
        dueDate: iso(dueMs).slice(0, 10),
        status,
        paymentStatus: status === 'paid' ? 'paid' : status === 'partial' ? 'partially_paid' : 'unpaid',
        paidAmount,
        actionStatus: prng.pick(['sent', 'viewed', 'draft']),
        comments: 'Thank you for your business.',
        privateNotes: '',
        discount: 0,
        discountType: 2,
        markup: 0,
        markupType: 1,
        items: lines,
        taxes: [],
        subTotal,
        total,
        createdAt: iso(createdMs),
        updatedAt: iso(updatedMs),
      }),
      createdMs,
      updatedMs,
      {
        // A client who paid (all or part) signed on the job: derived, no PRNG draw, so seeds keep their data.
        signatures:
          status === 'paid' || status === 'partial'
            ? [{ role: 'client', name: clientDisplayName(client.doc), signedAt: iso(createdMs) }]
            : [],
      },
    )
  }
  return invoices
}
