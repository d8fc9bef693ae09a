// The destination's exactness check: every replicated table in Postgres against the mirror, column by
// column, after the type mapping (docs/postgres.md). Returns the differences; empty
// means the replica is exact.
import type Database from 'better-sqlite3'
import type { TableSpec } from '../../src/model/table-spec.js'
import { instantOrNull } from '../../src/destination/postgres-types.js'
import { pgQuery } from './postgres-server.js'

function fromMirror(kind: string, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (kind) {
    case 'time':
      return instantOrNull(v)
    case 'flag':
      return v !== 0
    case 'json':
      try {
        return JSON.parse(v as string) as unknown
      } catch {
        return v
      }
    case 'bytes':
      return Buffer.from(v as Buffer).toString('hex')
    case 'integer':
    case 'real':
      return Number(v)
    default:
      return v
  }
}

function fromPostgres(kind: string, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (kind) {
    case 'time':
      return (v as Date).toISOString()
    case 'bytes':
      return (v as Buffer).toString('hex')
    case 'integer':
    case 'real':
      return Number(v)
    default:
      return v
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * JSON with object keys sorted (jsonb keeps its own key order), NUL dropped (Postgres text cannot hold
 * it), a UTF-16 surrogate without its pair as U+FFFD (jsonb cannot hold it either).
 */
function canonical(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.replaceAll('\0', '').replace(LONE_SURROGATE, '\uFFFD'))
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(v) ?? 'undefined'
}

const q = (n: string) => `"${n.replace(/"/g, '""')}"`

export async function comparePostgres(
  sqlite: Database.Database,
  url: string,
  schema: string,
  tables: readonly TableSpec[],
  /** Only this account's rows in Postgres (account_id); default: every row. */
  accountId?: string,
): Promise<string[]> {
  const diffs: string[] = []
  for (const t of tables) {
    const cols = t.columns.map((c) => c.name)
    const order = t.primaryKey.map(q).join(', ')
    const mirror = (
      sqlite
        .prepare(`SELECT ${cols.map(q).join(', ')} FROM ${q(t.name)} ORDER BY ${order}`)
        .raw()
        .all() as unknown[][]
    ).map((r) => r.map((v, i) => fromMirror(t.columns[i]!.kind, v)))
    const where = accountId === undefined ? '' : ` WHERE account_id = $1`
    const rows = await pgQuery(
      url,
      `SELECT ${cols.map(q).join(', ')} FROM ${q(schema)}.${q(t.name)}${where}`,
      accountId === undefined ? [] : [accountId],
    )
    const pgRows = rows.map((r) => cols.map((c, i) => fromPostgres(t.columns[i]!.kind, r[c])))
    const key = (r: unknown[]) => t.primaryKey.map((k) => String(r[cols.indexOf(k)])).join('|')
    const pgByKey = new Map(pgRows.map((r) => [key(r), r]))
    if (pgRows.length !== mirror.length) diffs.push(`${t.name}: ${mirror.length} rows in the mirror, ${pgRows.length} in Postgres`)
    for (const m of mirror) {
      const p = pgByKey.get(key(m))
      if (p === undefined) {
        diffs.push(`${t.name} ${key(m)}: missing in Postgres`)
        continue
      }
      for (let i = 0; i < cols.length; i++) {
        if (canonical(m[i]) !== canonical(p[i])) {
          diffs.push(`${t.name} ${key(m)}.${cols[i]}: mirror ${canonical(m[i])}, Postgres ${canonical(p[i])}`)
        }
      }
    }
  }
  return diffs
}
