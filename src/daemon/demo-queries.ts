// The example queries `fsm-sync demo` runs on the mirror once the backfill is done: what a reader
// of the mirror would ask first.

export const DEMO_QUERIES: readonly { title: string; sql: string }[] = [
  {
    title: 'Jobs by status',
    sql: `SELECT job_status, count(*) AS jobs, round(sum(total), 2) AS total FROM jobs WHERE deleted_at IS NULL GROUP BY job_status ORDER BY jobs DESC`,
  },
  {
    title: 'Clients with the most unpaid invoices',
    sql: `SELECT coalesce(nullif(c.company_name, ''), c.first_name || ' ' || c.last_name) AS client, count(*) AS invoices, round(sum(i.total), 2) AS unpaid
          FROM invoices i JOIN clients c ON c.id = i.client_id
          WHERE i.deleted_at IS NULL AND i.status IN ('unpaid', 'overdue', 'partial') GROUP BY c.id ORDER BY unpaid DESC LIMIT 5`,
  },
  {
    title: 'Visits by status',
    sql: `SELECT visit_status, count(*) AS visits FROM visits WHERE deleted_at IS NULL GROUP BY visit_status ORDER BY visits DESC`,
  },
  {
    title: 'Custom objects and their record counts',
    sql: `SELECT t.slug, t.view_name, count(r.id) AS records FROM custom_object_types t LEFT JOIN custom_records r ON r.slug = t.slug AND r.deleted_at IS NULL GROUP BY t.slug`,
  },
  {
    title: 'The latest changes (what a warehouse loader reads)',
    sql: `SELECT seq, table_name, record_id, op, changed_at FROM change_log ORDER BY seq DESC LIMIT 5`,
  },
]
