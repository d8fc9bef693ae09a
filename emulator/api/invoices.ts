// Invoices (spec: Endpoints, Invoices; Invoice status). DELETE soft-deletes any invoice and
// answers {id, deleted: true}; the payment link is minted once and returned identically after.
import { Collection, type Doc, type StoredRecord } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import { iso } from '../core/iso-time.js'
import { requireId } from '../core/validate.js'
import { emit, type EmulatorContext, type Origin } from '../context.js'
import { CURRENCY } from '../data/account-config.js'
import { shape } from '../data/docs.js'
import type { InvoiceInternal } from '../data/state.js'
import { listResponse, parseListQuery, sameIgnoringCase } from '../http/list-query.js'
import type { RouteDef } from '../http/router.js'
import { parseInvoiceInput, type InvoiceInput } from './invoice-input.js'

const SORTABLE = ['createdAt', 'updatedAt', 'total', 'paymentStatus', 'dueDate', 'documentNumber'] as const

export type InvoiceRecord = StoredRecord<InvoiceInternal>

export function createInvoice(ctx: EmulatorContext, input: InvoiceInput, origin: Origin): InvoiceRecord {
  const { state } = ctx
  if (state.clients.live(input.clientId ?? '') === undefined)
    throw badRequest(`clientId ${String(input.clientId)} does not match a client of this account`)
  const now = ctx.clock.now()
  const id = state.ids.make(now)
  const documentNumber = `INV-${String(state.next.documentNumber++).padStart(5, '0')}`
  const doc = shape('invoice', {
    documentNumber,
    title: '',
    date: iso(now).slice(0, 10),
    dueDate: null,
    status: 'unpaid',
    paymentStatus: 'unpaid',
    paidAmount: 0,
    actionStatus: 'draft',
    comments: '',
    privateNotes: '',
    discount: 0,
    discountType: 2,
    markup: 0,
    markupType: 2,
    items: [],
    taxes: [],
    subTotal: 0,
    total: 0,
    ...input.fields,
    id,
    recordId: state.prng.uuid(),
    clientId: input.clientId,
    createdAt: iso(now),
    updatedAt: iso(now),
  })
  const rec = state.invoices.insert(id, doc, now, now, {})
  ctx.counters.bump(`writes.invoices.${origin}`)
  emit(ctx, origin, 'invoice.created', rec.doc)
  return rec
}

export function updateInvoice(ctx: EmulatorContext, rec: InvoiceRecord, fields: Doc, origin: Origin): void {
  const previous = rec.doc.status
  ctx.state.invoices.write(rec, shape('invoice', { ...rec.doc, ...fields }), ctx.clock.now())
  ctx.counters.bump(`writes.invoices.${origin}`)
  emit(ctx, origin, 'invoice.updated', rec.doc)
  if (rec.doc.status === 'paid' && previous !== 'paid') emit(ctx, origin, 'invoice.paid', rec.doc)
}

export function deleteInvoice(ctx: EmulatorContext, rec: InvoiceRecord, origin: Origin): void {
  ctx.state.invoices.softDelete(rec, ctx.clock.now())
  ctx.counters.bump(`writes.invoices.${origin}`)
  emit(ctx, origin, 'invoice.deleted', { id: rec.id })
}

function liveInvoice(ctx: EmulatorContext, id: string | undefined): InvoiceRecord {
  const rec = ctx.state.invoices.live(requireId(id))
  if (rec === undefined) throw notFound('Invoice not found')
  return rec
}

export function invoiceRoutes(ctx: EmulatorContext): RouteDef[] {
  const { state } = ctx
  const one = (rec: InvoiceRecord) => ({ body: `{"success":true,"data":${Collection.json(rec)}}` })
  // GET /api/v1/invoices/{id} only: the list shape plus `signatures` (spec: Invoice, "the
  // single-invoice response includes totals and captured signature blocks"; totals are subTotal
  // and total, already in every row).
  const single = (rec: InvoiceRecord) => {
    const blocks = (rec.internal.signatures ?? []).map((s) => ({
      ...s,
      imageUrl: `${ctx.baseUrl}/hosted/signatures/${rec.id}/${s.role}.png`,
    }))
    return { body: `{"success":true,"data":${Collection.json(rec).slice(0, -1)},"signatures":${JSON.stringify(blocks)}}}` }
  }
  return [
    {
      method: 'GET',
      path: '/api/v1/invoices',
      family: 'v1',
      scope: 'invoices:read',
      handler: (req) => {
        const lq = { ...parseListQuery(req.query, SORTABLE), tieShuffle: req.tieShuffle ?? null }
        const clientId = req.query.get('clientId') ?? ''
        const status = req.query.get('status') ?? ''
        if (clientId === '' && status === '') return listResponse(state.invoices, lq, null)
        return listResponse(
          state.invoices,
          lq,
          (r) => (clientId === '' || r.doc.clientId === clientId) && (status === '' || sameIgnoringCase(r.doc.status, status)),
        )
      },
    },
    {
      method: 'POST',
      path: '/api/v1/invoices',
      family: 'v1',
      scope: 'invoices:write',
      handler: (req) => one(createInvoice(ctx, parseInvoiceInput(req.body, 'create'), 'api')),
    },
    {
      method: 'GET',
      path: '/api/v1/invoices/:id/payment-link',
      family: 'v1',
      scope: 'invoices:read',
      handler: (req) => {
        const rec = liveInvoice(ctx, req.params.id)
        ctx.integrations.connected('payments')
        if (rec.internal.paymentLink === undefined) {
          const balance = Math.round((Number(rec.doc.total ?? 0) - Number(rec.doc.paidAmount ?? 0)) * 100) / 100
          const token = state.prng.hex(32)
          rec.internal.paymentLink = {
            paymentUrl: `${ctx.baseUrl}/hosted/invoices/${token}`,
            invoiceId: rec.id,
            amount: balance,
            currency: CURRENCY.toLowerCase(),
          }
        }
        return { body: { success: true, data: rec.internal.paymentLink } }
      },
    },
    {
      method: 'GET',
      path: '/api/v1/invoices/:id',
      family: 'v1',
      scope: 'invoices:read',
      handler: (req) => single(liveInvoice(ctx, req.params.id)),
    },
    {
      method: 'PUT',
      path: '/api/v1/invoices/:id',
      family: 'v1',
      scope: 'invoices:write',
      handler: (req) => {
        const rec = liveInvoice(ctx, req.params.id)
        updateInvoice(ctx, rec, parseInvoiceInput(req.body, 'update').fields, 'api')
        return one(rec)
      },
    },
    {
      method: 'DELETE',
      path: '/api/v1/invoices/:id',
      family: 'v1',
      scope: 'invoices:write',
      handler: (req) => {
        const rec = liveInvoice(ctx, req.params.id)
        deleteInvoice(ctx, rec, 'api')
        return { body: { success: true, data: { id: rec.id, deleted: true } } }
      },
    },
  ]
}
