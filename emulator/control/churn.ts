// POST /__emulator/churn: background creates, updates and deletes at a given rate across clients,
// jobs, visits, invoices and custom objects. A share of them goes through the API write path
// (emitting webhooks like a v1 write), the rest is made web-app style.
import type { EmulatorContext, Origin } from '../context.js'
import type { StoredRecord } from '../core/collection.js'
import { createClient, deleteClient, updateClient } from '../api/clients.js'
import { createInvoice, deleteInvoice, updateInvoice } from '../api/invoices.js'
import { createJob, deleteJob, updateJob } from '../api/jobs.js'
import { updateVisit } from '../api/visits.js'
import { VISIT_STATUSES } from '../data/account-config.js'
import { createRecord, deleteRecord, updateRecord } from '../objects/object-writes.js'
import { fakeClient, fakeInvoice, fakeJob, fakeRecordData } from './fake-input.js'

export interface ChurnMix {
  create: number
  update: number
  delete: number
  /** Share of operations made through the API path (emitting webhooks). */
  apiShare: number
  resources: string[]
}

const DEFAULT_MIX: ChurnMix = {
  create: 0.25,
  update: 0.65,
  delete: 0.1,
  apiShare: 0.5,
  resources: ['clients', 'jobs', 'visits', 'invoices', 'objects'],
}
const TICK_MS = 20

export class Churn {
  private timer: NodeJS.Timeout | null = null
  private owed = 0
  private last = 0
  ratePerSecond = 0
  mix: ChurnMix = DEFAULT_MIX
  done = 0
  errors = 0
  lastError: string | null = null

  constructor(private readonly ctx: EmulatorContext) {}

  start(ratePerSecond: number, mix: Partial<ChurnMix> | undefined): void {
    this.stop()
    if (ratePerSecond <= 0) return
    this.ratePerSecond = ratePerSecond
    this.mix = { ...DEFAULT_MIX, ...mix }
    this.last = performance.now()
    this.timer = setInterval(() => this.tick(), TICK_MS)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    this.ratePerSecond = 0
    this.owed = 0
  }

  status(): Record<string, unknown> {
    return {
      running: this.timer !== null,
      ratePerSecond: this.ratePerSecond,
      mix: this.mix,
      done: this.done,
      errors: this.errors,
      lastError: this.lastError,
    }
  }

  private tick(): void {
    const now = performance.now()
    this.owed += ((now - this.last) / 1000) * this.ratePerSecond
    this.last = now
    this.ctx.overdue.run(this.ctx)
    while (this.owed >= 1) {
      this.owed--
      try {
        this.one()
        this.done++
      } catch (err) {
        this.errors++
        this.lastError = err instanceof Error ? err.message : String(err)
      }
    }
  }

  /** One random operation. */
  one(): void {
    const { state } = this.ctx
    const { prng } = state
    const m = this.mix
    const resource = prng.pick(m.resources)
    const origin: Origin = prng.chance(m.apiShare) ? 'api' : 'app'
    const r = prng.next() * (m.create + m.update + m.delete)
    const op = r < m.create ? 'create' : r < m.create + m.update ? 'update' : 'delete'
    const ctx = this.ctx
    const pickLive = <I>(c: { all(): StoredRecord<I>[] }) => {
      const live = c.all().filter((x) => !x.deleted)
      return live.length === 0 ? undefined : prng.pick(live)
    }
    if (resource === 'clients') {
      const rec = pickLive(state.clients)
      if (op === 'create' || rec === undefined) createClient(ctx, fakeClient(prng), origin)
      else if (op === 'update') updateClient(ctx, rec, { fields: { notes: `churn ${prng.hex(6)}` }, properties: undefined }, origin)
      else deleteClient(ctx, rec, origin)
    } else if (resource === 'jobs') {
      const rec = pickLive(state.jobs)
      if (op === 'create' || rec === undefined) createJob(ctx, fakeJob(state), origin)
      else if (op === 'update')
        updateJob(ctx, rec, { notes: `churn ${prng.hex(6)}`, priority: prng.pick(['low', 'medium', 'high']) }, origin)
      else deleteJob(ctx, rec, origin)
    } else if (resource === 'visits') {
      // Visits are never created or deleted over the API: churn only updates them.
      const rec = pickLive(state.visits)
      if (rec !== undefined)
        updateVisit(ctx, rec, prng.chance(0.5) ? { visitStatus: prng.pick(VISIT_STATUSES) } : { notes: `churn ${prng.hex(6)}` }, origin)
    } else if (resource === 'invoices') {
      const rec = pickLive(state.invoices)
      if (op === 'create' || rec === undefined) createInvoice(ctx, fakeInvoice(state), origin)
      else if (op === 'update') updateInvoice(ctx, rec, { comments: `churn ${prng.hex(6)}` }, origin)
      else deleteInvoice(ctx, rec, origin)
    } else {
      const def = prng.pick(state.objectDefs)
      const coll = state.objects.get(def.slug)
      const rec = coll === undefined ? undefined : pickLive(coll)
      const w = { data: fakeRecordData(state, def), stage: undefined, linkedRecords: undefined, suppress: false, statusInBody: false }
      if (op === 'create' || rec === undefined) createRecord(ctx, def, w, origin, 'en')
      // The API has no delete on custom objects: deletions are in-app.
      else if (op === 'update')
        updateRecord(ctx, def, rec, { ...w, stage: prng.pick(def.pipeline.stages).value, statusInBody: true }, origin, 'en')
      else deleteRecord(ctx, def, rec, 'app')
    }
  }
}
