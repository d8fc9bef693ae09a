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

/**
 * Whether a text is an instant in the mirror's canonical form: the pattern, a day that exists, and a
 * year from 0001 to 9999. Year 0000 (1 BC in ISO-8601) fits the pattern but not Postgres, whose
 * timestamptz refuses it, nor most warehouses: it is not an instant here. The one rule the mirror's
 * writers (canonicalTime) and the destinations (which write anything else as NULL) follow.
 */
export function isInstant(value: unknown): value is string {
  if (typeof value !== 'string' || !CANONICAL.test(value) || value.startsWith('0000')) return false
  // Days 29 to 31 exist only in some months: a round trip tells.
  return value.slice(8, 10) <= '28' || isoOrEmpty(Date.parse(value)) === value
}

/** The ISO text of an instant in milliseconds, or '' for NaN and beyond what a Date holds. */
function isoOrEmpty(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : ''
}

/**
 * Canonical form of an upstream date-time, or null when absent. Throws on a value that is not a
 * date, or whose instant has no canonical form (isInstant: years 0001 to 9999).
 */
export function canonicalTime(value: unknown): string | null {
  if (value === null || value === undefined || value === '') return null
  // The common case, already canonical, costs a regex test instead of a parse and a format.
  if (typeof value === 'string' && CANONICAL.test(value) && value.slice(8, 10) <= '28' && !value.startsWith('0000')) return value
  if (typeof value !== 'string' && typeof value !== 'number') throw new TypeError(`not a date-time: ${JSON.stringify(value)}`)
  const ms = typeof value === 'number' ? value : parseInstant(value)
  const text = isoOrEmpty(ms)
  if (!isInstant(text)) throw new TypeError(`not a date-time between years 0001 and 9999: ${JSON.stringify(value)}`)
  return text
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
