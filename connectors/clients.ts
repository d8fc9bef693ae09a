// Clients (spec: Resources, Client; Endpoints, Clients).
import { defineStream } from './define-stream.js'
import { integer, json, phone, real, text } from './mapping.js'

export const clients = defineStream({
  name: 'clients',
  route: '/api/v1/clients',
  scope: 'clients:read',
  paging: 'updated-keyset',
  table: 'clients',
  childTables: [],
  snapshotEvents: ['client.created', 'client.updated'],
  deletions: { events: ['client.deleted'], reconcile: true },
  columns: (p) => ({
    record_id: text(p.recordId),
    first_name: text(p.firstName),
    last_name: text(p.lastName),
    email: text(p.email),
    ...phone('phone_', p.phoneNumber),
    company_name: text(p.companyName),
    property_address: json(p.propertyAddress),
    billing_address: json(p.billingAddress),
    company_address: json(p.companyAddress),
    client_type: text(p.clientType),
    stage: text(p.stage),
    status: text(p.status),
    tax_number: text(p.taxNumber),
    website: text(p.website),
    notes: text(p.notes),
    notification_preferences: json(p.notificationPreferences),
    preferred_technician_ids: json(p.preferredTechnicianIds),
    job_form_ids: json(p.jobFormIds),
    properties: json(p.properties),
    job_count: integer(p.jobCount),
    job_total_amount: real(p.jobTotalAmount),
    created_by: text(p.createdBy),
  }),
})
