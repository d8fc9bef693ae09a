// Reading the rows out of a list answer, tolerantly where the spec says "not shown".
import type { ApiResponse } from './api-client.js'
import { MalformedResponseError } from './errors.js'
import { KeysetRowSchema, type KeysetRow, type Row } from './response-schemas.js'

function malformed(res: ApiResponse, path: string, detail: string, cause: unknown): MalformedResponseError {
  return new MalformedResponseError({ route: res.route, target: `GET ${path}`, status: res.status, detail }, { cause })
}

/**
 * The rows of a list: `data` as an array, or (legacy routes: `data.team`, `data.taxes`) an object
 * holding exactly one array property.
 */
export function extractRows(res: ApiResponse, path: string): Row[] {
  const data = res.data
  const rows = Array.isArray(data) ? (data as unknown[]) : singleArrayProperty(data)
  if (rows === undefined) throw malformed(res, path, '`data` holds no array of rows', data)
  rows.forEach((row, i) => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) throw malformed(res, path, `row ${i} is not an object`, row)
  })
  return rows as Row[]
}

/**
 * Rows that each carry an `id` and a parseable `updatedAt`, for the keyset walk. The rows are
 * returned as received (zod's output would move the schema's keys first, and the mirror keeps
 * each payload exactly as the API sent it).
 */
export function readKeysetRows(res: ApiResponse, path: string): KeysetRow[] {
  return extractRows(res, path).map((row, i) => {
    const parsed = KeysetRowSchema.safeParse(row)
    if (!parsed.success) {
      const detail = parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')
      throw malformed(res, path, `row ${i} cannot be paged by updatedAt (${detail})`, parsed.error)
    }
    return row as KeysetRow
  })
}

function singleArrayProperty(data: unknown): unknown[] | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  const arrays = Object.values(data).filter((v): v is unknown[] => Array.isArray(v))
  return arrays.length === 1 ? arrays[0] : undefined
}
