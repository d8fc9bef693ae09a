// The invoice write contract (spec: Invoice). Totals are stored as sent (0 when omitted), at least
// one line item on create, document-level `taxes` on create only (400 on update), `paidAmount`,
// `paymentStatus` and `actionStatus` on update only, and a `status` outside the four is dropped on
// update. Resolved: the "unknown key gives 400" rule of Conventions 7 names clients, jobs and
// visits only, so other invoice keys are ignored (the invoice record has fields the spec does not show).
import type { Doc } from '../core/collection.js'
import { badRequest } from '../core/http-error.js'
import { isDateOnly } from '../core/iso-time.js'
import { asObject, optNumber, optString } from '../core/validate.js'
import { INVOICE_STATUSES } from '../data/account-config.js'

function numberOr(v: unknown, fallback: number, name: string): number {
  if (v === undefined || v === null) return fallback
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`'${name}' must be a number`)
  return v
}

function lineTax(t: unknown, where: string): Doc {
  if (typeof t !== 'object' || t === null || Array.isArray(t)) throw badRequest(`${where} must be an object`)
  const o = t as Doc
  return {
    taxId: o.taxId ?? null,
    taxName: o.taxName ?? null,
    taxRate: numberOr(o.taxRate, 0, `${where}.taxRate`),
    taxAmount: numberOr(o.taxAmount, 0, `${where}.taxAmount`),
    taxType: o.taxType ?? null,
  }
}

function lineItem(item: unknown, i: number): Doc {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw badRequest(`items[${i}] must be an object`)
  const o = item as Doc
  const taxes = o.taxes === undefined || o.taxes === null ? [] : o.taxes
  if (!Array.isArray(taxes)) throw badRequest(`items[${i}].taxes must be an array`)
  return {
    itemId: o.itemId ?? null,
    name: o.name ?? null,
    description: o.description ?? null,
    quantity: numberOr(o.quantity, 1, `items[${i}].quantity`),
    rate: numberOr(o.rate, 0, `items[${i}].rate`),
    taxes: taxes.map((t, k) => lineTax(t, `items[${i}].taxes[${k}]`)),
  }
}

function documentTax(t: unknown, i: number): Doc {
  if (typeof t !== 'object' || t === null || Array.isArray(t)) throw badRequest(`taxes[${i}] must be {taxId, name, rate}`)
  const o = t as Doc
  return { taxId: o.taxId ?? null, name: o.name ?? null, rate: numberOr(o.rate, 0, `taxes[${i}].rate`) }
}

function dateField(b: Doc, key: string, out: Doc): void {
  const v = b[key]
  if (v === undefined) return
  if (v !== null && (typeof v !== 'string' || !isDateOnly(v))) throw badRequest(`'${key}' must be a date (YYYY-MM-DD)`)
  out[key] = v
}

function typeField(b: Doc, key: string, out: Doc): void {
  const v = b[key]
  if (v === undefined) return
  if (v !== 1 && v !== 2) throw badRequest(`'${key}' must be 1 (percent) or 2 (flat amount)`)
  out[key] = v
}

export interface InvoiceInput {
  fields: Doc
  clientId?: string
}

export function parseInvoiceInput(body: unknown, mode: 'create' | 'update'): InvoiceInput {
  const b = asObject(body)
  const f: Doc = {}
  for (const k of ['title', 'comments', 'privateNotes'] as const) {
    const v = optString(b, k)
    if (v !== undefined) f[k] = v
  }
  dateField(b, 'date', f)
  dateField(b, 'dueDate', f)
  for (const k of ['discount', 'markup', 'subTotal', 'total'] as const) {
    const v = optNumber(b, k)
    if (v !== undefined) f[k] = v
  }
  typeField(b, 'discountType', f)
  typeField(b, 'markupType', f)
  if (b.items !== undefined) {
    if (!Array.isArray(b.items)) throw badRequest("'items' must be an array of line items")
    f.items = b.items.map(lineItem)
  }
  const status = b.status
  const input: InvoiceInput = { fields: f }
  if (mode === 'create') {
    if (typeof b.clientId !== 'string' || !/^[a-fA-F0-9]{24}$/.test(b.clientId))
      throw badRequest("'clientId' is required: the 24-hex id of a client")
    input.clientId = b.clientId
    if (!Array.isArray(f.items) || f.items.length === 0) throw badRequest('At least one line item is required')
    if (b.taxes !== undefined) {
      if (!Array.isArray(b.taxes)) throw badRequest("'taxes' must be an array of {taxId, name, rate}")
      f.taxes = b.taxes.map(documentTax)
    }
    if (status !== undefined) {
      if (typeof status !== 'string' || !(INVOICE_STATUSES as readonly string[]).includes(status))
        throw badRequest(`'status' must be one of: ${INVOICE_STATUSES.join(', ')}`)
      f.status = status
    }
    const documentNumber = optString(b, 'documentNumber')
    if (typeof documentNumber === 'string') f.documentNumber = documentNumber
  } else {
    if (b.taxes !== undefined) throw badRequest("Document-level 'taxes' cannot be changed on update")
    if (typeof status === 'string' && (INVOICE_STATUSES as readonly string[]).includes(status)) f.status = status
    const paid = optNumber(b, 'paidAmount')
    if (paid !== undefined) f.paidAmount = paid
    for (const k of ['paymentStatus', 'actionStatus'] as const) {
      const v = optString(b, k)
      if (v !== undefined) f[k] = v
    }
  }
  return input
}
