// Invoices (spec: Resources, Invoice; Endpoints, Invoices). Line items go to invoice_items, keyed
// by their position in the payload.
import { col } from './columns.js'
import { defineStream } from './define-stream.js'

export const invoices = defineStream({
  name: 'invoices',
  route: '/api/v1/invoices',
  scope: 'invoices:read',
  paging: 'updated-keyset',
  table: 'invoices',
  description: 'An invoice to a client; its line items are in invoice_items.',
  snapshotEvents: ['invoice.created', 'invoice.updated', 'invoice.paid'],
  deletions: { events: ['invoice.deleted'], reconcile: true },
  columns: [
    col('client_id', 'text', 'clientId', 'The client invoiced (clients.id).'),
    col('title', 'text', 'title', 'Title.'),
    col('date', 'text', 'date', 'Invoice date (YYYY-MM-DD).'),
    col('due_date', 'text', 'dueDate', 'Due date (YYYY-MM-DD).'),
    col('comments', 'text', 'comments', 'Comments shown on the invoice.'),
    col('private_notes', 'text', 'privateNotes', 'Private notes.'),
    col('discount', 'real', 'discount', 'Document-level discount.'),
    col('discount_type', 'integer', 'discountType', 'Discount type: 1 percent, 2 flat amount.'),
    col('markup', 'real', 'markup', 'Document-level markup.'),
    col('markup_type', 'integer', 'markupType', 'Markup type: 1 percent, 2 flat amount.'),
    col('sub_total', 'real', 'subTotal', 'Subtotal, as sent (no arithmetic upstream).'),
    col('total', 'real', 'total', 'Total, as sent.'),
    col('taxes', 'json', 'taxes', 'Document-level taxes as a JSON array.'),
    col('status', 'text', 'status', 'unpaid, paid, partial or overdue.'),
    col('payment_status', 'text', 'paymentStatus', 'Payment status.'),
    col('paid_amount', 'real', 'paidAmount', 'Amount paid.'),
    col('action_status', 'text', 'actionStatus', 'Action status.'),
    col('document_number', 'text', 'documentNumber', 'Document number.'),
  ],
  children: [
    {
      table: 'invoice_items',
      description: "A line item of an invoice, keyed by its position in the invoice's items.",
      parentColumn: 'invoice_id',
      each: 'items',
      position: 'position',
      key: ['position'],
      columns: [
        col('item_id', 'text', 'items[].itemId', 'The price-book item (items.id).'),
        col('name', 'text', 'items[].name', 'Name.'),
        col('description', 'text', 'items[].description', 'Description.'),
        col('quantity', 'real', 'items[].quantity', 'Quantity.'),
        col('rate', 'real', 'items[].rate', 'Unit price.'),
        col('taxes', 'json', 'items[].taxes', "The item's taxes as a JSON array."),
      ],
    },
  ],
})
