// One canonical UTC text form for every instant in the mirror, `YYYY-MM-DDTHH:MM:SS.sssZ`, so that
// text order is time order (contract.md, Tables). Upstream values are parsed as instants first.

const CANONICAL = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/

/** Canonical form of an upstream date-time, or null when absent. Throws on a value that is not a date. */
export function canonicalTime(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null
  // The common case, already canonical, costs a regex test instead of a parse and a format.
  if (typeof value === 'string' && CANONICAL.test(value) && value.slice(8, 10) <= '28') return value
  if (typeof value !== 'string' && typeof value !== 'number') throw new TypeError(`not a date-time: ${JSON.stringify(value)}`)
  const ms = typeof value === 'number' ? value : Date.parse(value)
  if (!Number.isFinite(ms)) throw new TypeError(`not a date-time: ${JSON.stringify(value)}`)
  return new Date(ms).toISOString()
}

/** Like canonicalTime, but keeps an unparseable value as text instead of failing the whole page. */
export function canonicalTimeOrText(value: unknown): string | null {
  try {
    return canonicalTime(value)
  } catch {
    return typeof value === 'string' ? value : null
  }
}

export function isoNow(now: number): string {
  return new Date(now).toISOString()
}
