// One canonical UTC text form for every instant in the mirror, `YYYY-MM-DDTHH:MM:SS.sssZ`, so that
// text order is time order. Upstream values are parsed as instants first, always through
// parseInstant: the spec makes every datetime UTC, zone-less ones included, whereas Date.parse and
// `new Date(text)` read a zone-less date-time in the host's time zone (a mirror run with
// TZ=America/New_York would store such a value 5 h late and move its cursor past later updates).

const CANONICAL = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/
// ISO-8601 date and time without a zone designator (`T` or a space between them).
const ZONELESS_ISO = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/
// Any other form is accepted only with an explicit zone (ISO `Z`/offset, an HTTP-date's `GMT`):
// without one, the result would depend on the host.
const EXPLICIT_ZONE = /(?:\d[Zz]|[+-]\d{2}:?\d{2}|\b(?:GMT|UTC))$/
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/

/**
 * Milliseconds since the epoch of an upstream date-time text, or NaN when it is not one. A zone-less
 * ISO-8601 value is UTC (spec, Conventions: datetimes are UTC); an explicit `Z` or offset is kept;
 * a date alone is midnight UTC. The one place in src/ and connectors/ that turns text into an instant.
 */
export function parseInstant(text: string): number {
  const s = text.trim()
  const zoneless = ZONELESS_ISO.exec(s)
  if (zoneless !== null) return Date.parse(`${zoneless[1]}T${zoneless[2]}Z`)
  if (DATE_ONLY.test(s) || EXPLICIT_ZONE.test(s)) return Date.parse(s)
  return Number.NaN
}

/** Canonical form of an upstream date-time, or null when absent. Throws on a value that is not a date. */
export function canonicalTime(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null
  // The common case, already canonical, costs a regex test instead of a parse and a format.
  if (typeof value === 'string' && CANONICAL.test(value) && value.slice(8, 10) <= '28') return value
  if (typeof value !== 'string' && typeof value !== 'number') throw new TypeError(`not a date-time: ${JSON.stringify(value)}`)
  const ms = typeof value === 'number' ? value : parseInstant(value)
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
