// change_log's `record_id`: the key of the changed record as one text, written by the record writer,
// matched in SQL by the mirror's snapshot reads and taken apart by the Postgres destination. A key of
// one column is its value; a longer key (custom records: slug, id) joins its values with `/`, and
// only the last value may itself hold a `/` (slugs are `[a-z0-9_]`).
import { quoteIdentifier } from './sql-names.js'

const SEPARATOR = '/'

/** The record_id of a key, its values in primary-key order. */
export function encodeChangeKey(key: readonly string[]): string {
  return key.join(SEPARATOR)
}

/** The key values of a record_id, for a key of `keyLength` columns. */
export function decodeChangeKey(recordId: string, keyLength: number): string[] {
  if (keyLength <= 1) return [recordId]
  const parts: string[] = []
  let rest = recordId
  for (let i = 0; i < keyLength - 1; i++) {
    const at = rest.indexOf(SEPARATOR)
    if (at < 0) break
    parts.push(rest.slice(0, at))
    rest = rest.slice(at + 1)
  }
  parts.push(rest)
  return parts
}

/** The SQL expression of a row's record_id over its key columns (each prefixed with `alias`). */
export function changeKeySql(columns: readonly string[], alias = ''): string {
  return columns.map((c) => `${alias}${quoteIdentifier(c)}`).join(` || '${SEPARATOR}' || `)
}
