// Reference data read through the legacy routes: full snapshots; rows missing from a
// complete snapshot get deleted_at. Legacy records carry no reliable updatedAt, so `updated_at`
// holds theirs when sent and '' otherwise, and a changed payload replaces the row.
import type { MigrationStatements } from './types.js'

const TAIL = `
  created_at TEXT,
  updated_at TEXT NOT NULL,
  deleted_at TEXT,
  raw TEXT NOT NULL,
  synced_at TEXT NOT NULL`

export const reference: MigrationStatements = [
  `CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT, type TEXT, price REAL, description TEXT, is_active INTEGER,${TAIL}) STRICT`,
  `CREATE TABLE taxes (id TEXT PRIMARY KEY, name TEXT, rate REAL,${TAIL}) STRICT`,
  `CREATE TABLE team_members (id TEXT PRIMARY KEY, name TEXT, email TEXT, role TEXT, is_active INTEGER, status TEXT,${TAIL}) STRICT`,
  `CREATE TABLE job_forms (id TEXT PRIMARY KEY, name TEXT,${TAIL}) STRICT`,
  `CREATE TABLE company (id TEXT PRIMARY KEY, company_name TEXT, email TEXT, phone TEXT, timezone TEXT, currency TEXT,${TAIL}) STRICT`,
]
