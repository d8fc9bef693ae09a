// Pure helpers that turn loosely-typed upstream values into values a STRICT SQLite column accepts.
// A value of the wrong type becomes NULL in its column; `raw` still holds it as received.
import type { Payload, SqlCell } from '../src/model/rows.js'
import { canonicalTimeOrText } from '../src/model/timestamps.js'

export const text = (v: unknown): string | null =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null

export const real = (v: unknown): number | null => {
  if (typeof v === 'number' && Number.isFinite(v)) return v
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v)
  return null
}

export const integer = (v: unknown): number | null => {
  const n = real(v)
  return n !== null && Number.isInteger(n) ? n : null
}

export const flag = (v: unknown): number | null => (typeof v === 'boolean' ? (v ? 1 : 0) : null)

/** Objects and arrays as JSON text (query with json_extract); absent as NULL. */
export const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v))

export const time = (v: unknown): string | null => canonicalTimeOrText(v)

export const obj = (v: unknown): Payload => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Payload) : {})

export const ids = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

/** A PhoneNumber flattened into `<prefix>country_code`, `<prefix>number`, `<prefix>country_identifier`. */
export function phone(prefix: string, v: unknown): Record<string, SqlCell> {
  const p = obj(v)
  return {
    [`${prefix}country_code`]: text(p.countryCode),
    [`${prefix}number`]: text(p.number),
    [`${prefix}country_identifier`]: text(p.countryIdentifier),
  }
}
