// The soak's external reader: a second process that keeps the mirror open read-only (as a BI tool or
// `sqlite3 -readonly` would) and queries it all along. On SIGTERM it prints one JSON line with its
// query and error counts; every error is a finding (SQLITE_BUSY above all: readers must never block
// or be blocked by the daemon in WAL mode).
import Database from 'better-sqlite3'
import { setTimeout as delay } from 'node:timers/promises'

const db = process.argv[2]
if (db === undefined) throw new Error('usage: reader-child.ts <mirror.db>')

const QUERIES = [
  `SELECT count(*) AS n FROM clients WHERE deleted_at IS NULL`,
  `SELECT job_status, count(*) AS n FROM jobs WHERE deleted_at IS NULL GROUP BY 1`,
  `SELECT j.id, count(v.id) AS visits FROM jobs j LEFT JOIN visits v ON v.job_id = j.id WHERE j.deleted_at IS NULL GROUP BY j.id LIMIT 50`,
  `SELECT status, sum(total) AS total FROM invoices WHERE deleted_at IS NULL GROUP BY 1`,
  `SELECT slug, count(*) AS n FROM custom_records WHERE deleted_at IS NULL GROUP BY 1`,
  `SELECT * FROM change_log ORDER BY seq DESC LIMIT 20`,
]

let queries = 0
const errors: Record<string, number> = {}
let firstError: string | null = null
let stopping = false
process.once('SIGTERM', () => (stopping = true))

let conn: Database.Database | null = null
while (!stopping) {
  try {
    conn ??= new Database(db, { readonly: true, fileMustExist: true })
    for (const sql of QUERIES) {
      conn.prepare(sql).all()
      queries++
    }
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'ERROR'
    errors[code] = (errors[code] ?? 0) + 1
    firstError ??= `${code}: ${(err as Error).message}`
    // A connection-level failure: open a fresh one next time, as a client would.
    conn?.close()
    conn = null
  }
  await delay(100)
}
conn?.close()
process.stdout.write(JSON.stringify({ queries, errors, firstError }) + '\n')
