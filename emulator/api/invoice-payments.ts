// A payment posted through the connected payment processor (spec: States, Invoice status:
// "`unpaid` or `partial` | payment posted through the connected payment processor | balance
// reaches zero | `paid`"; `partial` is "deposits applied, balance remaining"). The v1 API has no
// payment route, so the control API drives it: POST /__emulator/invoices/{id}/payments {amount?}.
//
// It is a service-side write, not a v1 write: `updatedAt` moves (a `since` sweep finds it) and no
// `invoice.*` webhook fires (spec: When events fire, "an invoice paid there" emits nothing today).
// An `overdue` invoice paid in full becomes `paid` too (the spec shows no order restrictions); a
// part payment makes an `unpaid` invoice `partial` and leaves `partial`/`overdue` as they are.
import type { Doc } from '../core/collection.js'
import { badRequest, notFound } from '../core/http-error.js'
import { requireId } from '../core/validate.js'
import type { EmulatorContext } from '../context.js'
import { shape } from '../data/docs.js'

const cents = (n: number): number => Math.round(n * 100) / 100

export function postPayment(ctx: EmulatorContext, id: string | undefined, body: Doc): Doc {
  const rec = ctx.state.invoices.live(requireId(id))
  if (rec === undefined) throw notFound('Invoice not found')
  ctx.integrations.connected('payments')
  const status = String(rec.doc.status)
  if (status === 'paid') throw badRequest('The invoice is already paid')
  const total = Number(rec.doc.total ?? 0)
  const paid = Number(rec.doc.paidAmount ?? 0)
  const balance = cents(total - paid)
  const amount = body.amount === undefined ? balance : body.amount
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0)
    throw badRequest("'amount' must be a positive number (default: the whole balance)")
  const paidAmount = cents(paid + amount)
  const settled = paidAmount >= total
  const next = settled ? 'paid' : status === 'unpaid' ? 'partial' : status
  const fields = { status: next, paymentStatus: settled ? 'paid' : 'partially_paid', paidAmount }
  ctx.state.invoices.write(rec, shape('invoice', { ...rec.doc, ...fields }), ctx.clock.now())
  ctx.counters.bump('writes.invoices.app')
  return { invoice: rec.doc, amount: cents(amount), balance: cents(Math.max(0, total - paidAmount)) }
}
