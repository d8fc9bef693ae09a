// Datetimes (spec: Conventions 3, Shared list parameters `since`/`timezone`): ISO-8601 in, UTC with
// milliseconds and `Z` out. A zone-less value is UTC unless a `timezone` is given, in which case it
// is wall-clock time in that IANA zone.
import { badRequest } from './http-error.js'

// A request formats the same instant several times (lastUsedAt, the log's times, updatedAt): the
// last answer is kept, which spares a Date allocation and a format on the list path.
let lastMs = Number.NaN
let lastIso = ''

export function iso(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString()
    lastMs = ms
  }
  return lastIso
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|z|[+-]\d{2}:?\d{2})?$/
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/

export const isDateOnly = (v: string): boolean => DATE_ONLY.test(v) && !Number.isNaN(Date.parse(`${v}T00:00:00Z`))

/** Offset of `zone` from UTC at instant `utcMs`, in ms (positive east of Greenwich). */
function zoneOffsetMs(zone: string, utcMs: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(utcMs))
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? '0')
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'))
  return asUtc - Math.floor(utcMs / 1000) * 1000
}

export function isValidZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** Parses an ISO-8601 value to ms, or returns null when it is not a date. */
export function parseInstant(value: string, timezone?: string): number | null {
  const m = ISO.exec(value.trim())
  if (m === null) return null
  const [, y, mo, d, h, mi, s, frac, zone] = m
  const fraction = Math.round(Number(`0.${frac ?? '0'}`) * 1000)
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0), fraction)
  if (Number.isNaN(wall)) return null
  // Reject rolled-over dates such as 2024-02-31.
  const check = new Date(wall)
  if (check.getUTCDate() !== Number(d) || check.getUTCMonth() !== Number(mo) - 1) return null
  if (zone !== undefined) {
    if (zone === 'Z' || zone === 'z') return wall
    const sign = zone.startsWith('-') ? -1 : 1
    const digits = zone.slice(1).replace(':', '')
    const offset = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4))) * 60_000
    return wall - sign * offset
  }
  if (timezone === undefined) return wall
  // Wall-clock time in `timezone`: iterate twice to settle around DST edges.
  let utc = wall - zoneOffsetMs(timezone, wall)
  utc = wall - zoneOffsetMs(timezone, utc)
  return utc
}

/** A query datetime for a list route: 400 when it is not a date (spec: Shared list parameters). */
export function queryInstant(name: string, value: string, timezone: string | undefined): number {
  if (timezone !== undefined && !isValidZone(timezone)) throw badRequest(`Invalid timezone: ${timezone}`)
  const ms = parseInstant(value, timezone)
  if (ms === null) throw badRequest(`Invalid date for '${name}': ${value}`)
  return ms
}

/** A body datetime, stored canonically (UTC, ms, Z). */
export function bodyInstant(name: string, value: unknown): string {
  if (typeof value !== 'string') throw badRequest(`'${name}' must be an ISO-8601 date-time string`)
  const ms = parseInstant(value)
  if (ms === null) throw badRequest(`'${name}' must be an ISO-8601 date-time string`)
  return iso(ms)
}
