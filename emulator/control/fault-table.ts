// Fault injection per route pattern (POST /__emulator/faults): a share of 5xx answers, added
// latency, a share of connection resets, a number of forced 429s with a Retry-After; two ways a
// proxy or an older server build misbehaves: `page` ignored, datetimes sent without their zone;
// and a list whose rows sharing a sort value come in a different order on each request.
// Patterns are `[METHOD ]/path` where `*` matches anything (slashes included).
import type { Prng } from '../core/prng.js'

export interface FaultRule {
  route: string
  status5xxShare: number
  latencyMs: number
  resetShare: number
  force429: { count: number; retryAfterSeconds: number } | null
  /** The route answers page 1 whatever `page` asks. */
  ignorePage: boolean
  /** Every UTC datetime in an answer body loses its `Z` (zone-less ISO-8601). */
  zonelessTimes: boolean
  /** Rows sharing the sort value of a list come in a new random order on each request. */
  shuffleTies: boolean
}

export interface FaultDecision {
  latencyMs: number
  reset: boolean
  status5xx: number | null
  force429: number | null
  ignorePage: boolean
  zonelessTimes: boolean
  /** Set when the rows of a tie are to be shuffled: the random source. */
  tieShuffle: Prng | null
}

function compile(route: string): (method: string, path: string) => boolean {
  const m = /^([A-Z]+)\s+(.*)$/.exec(route.trim())
  const method = m?.[1]
  const pattern = (m?.[2] ?? route).trim()
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  )
  return (reqMethod, path) => (method === undefined || method === reqMethod) && re.test(path)
}

export class FaultTable {
  private rules: { rule: FaultRule; matches: (m: string, p: string) => boolean }[] = []

  constructor(private readonly prng: Prng) {}

  /** Adds a rule, replacing one with the same pattern. */
  set(rule: FaultRule): void {
    this.rules = this.rules.filter((r) => r.rule.route !== rule.route)
    this.rules.push({ rule, matches: compile(rule.route) })
  }

  clear(route?: string): void {
    this.rules = route === undefined ? [] : this.rules.filter((r) => r.rule.route !== route)
  }

  list(): FaultRule[] {
    return this.rules.map((r) => r.rule)
  }

  decide(method: string, path: string): FaultDecision | null {
    const hits = this.rules.filter((r) => r.matches(method, path)).map((r) => r.rule)
    if (hits.length === 0) return null
    const d: FaultDecision = {
      latencyMs: 0,
      reset: false,
      status5xx: null,
      force429: null,
      ignorePage: false,
      zonelessTimes: false,
      tieShuffle: null,
    }
    for (const rule of hits) {
      d.ignorePage ||= rule.ignorePage
      d.zonelessTimes ||= rule.zonelessTimes
      if (rule.shuffleTies) d.tieShuffle = this.prng
      d.latencyMs = Math.max(d.latencyMs, rule.latencyMs)
      if (d.force429 === null && rule.force429 !== null && rule.force429.count > 0) {
        rule.force429.count--
        d.force429 = rule.force429.retryAfterSeconds
      }
      if (!d.reset && rule.resetShare > 0 && this.prng.chance(rule.resetShare)) d.reset = true
      if (d.status5xx === null && rule.status5xxShare > 0 && this.prng.chance(rule.status5xxShare))
        d.status5xx = this.prng.pick([500, 500, 502, 503, 504])
    }
    return d
  }
}
