// Invoices (spec: Resources, Invoice; Endpoints, Invoices). Line items go to invoice_items, keyed
// by their position in the payload.
import { defineStream } from './define-stream.js'
import { integer, json, obj, real, text } from './mapping.js'

export const invoices = defineStream({
  name: 'invoices',
  route: '/api/v1/invoices',
  scope: 'invoices:read',
  paging: 'updated-keyset',
  table: 'invoices',
  childTables: [{ table: 'invoice_items', parentColumn: 'invoice_id' }],
  snapshotEvents: ['invoice.created', 'invoice.updated', 'invoice.paid'],
  deletions: { events: ['invoice.deleted'], reconcile: true },
  columns: (p) => ({
    client_id: text(p.clientId),
    title: text(p.title),
    date: text(p.date),
    due_date: text(p.dueDate),
    comments: text(p.comments),
    private_notes: text(p.privateNotes),
    discount: real(p.discount),
    discount_type: integer(p.discountType),
    markup: real(p.markup),
    markup_type: integer(p.markupType),
    sub_total: real(p.subTotal),
    total: real(p.total),
    taxes: json(p.taxes),
    status: text(p.status),
    payment_status: text(p.paymentStatus),
    paid_amount: real(p.paidAmount),
    action_status: text(p.actionStatus),
    document_number: text(p.documentNumber),
  }),
  children: (p, id) => [
    {
      table: 'invoice_items',
      parentColumn: 'invoice_id',
      rows: (Array.isArray(p.items) ? p.items : []).map((raw, position) => {
        const item = obj(raw)
        return {
          invoice_id: id,
          position,
          item_id: text(item.itemId),
          name: text(item.name),
          description: text(item.description),
          quantity: real(item.quantity),
          rate: real(item.rate),
          taxes: json(item.taxes),
        }
      }),
    },
  ],
})
