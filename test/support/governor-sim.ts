// A discrete-event simulation of GovernorCore: arrivals, service times, aborts, 429 pauses and
// rate-limit observations on a simulated clock. Used by the property tests; no timers, no promises.
import { GovernorCore, PRIORITIES, type GovernorOptions, type Priority, type Ticket } from '../../src/api/governor/core.js'

export interface Arrival {
  gapMs: number
  priority: Priority
  serviceMs: number
  /** Abort this long after arrival, if still queued. */
  abortAfterMs?: number | undefined
}

export interface PauseEvent {
  at: number
  forMs: number
}

export interface ObserveEvent {
  at: number
  remaining: number
}

export interface SimStart {
  at: number
  ticket: Ticket
  /** Tickets waiting at that moment (before this one was taken), for priority checks. */
  violations: string[]
}

export interface SimResult {
  starts: SimStart[]
  tickets: Ticket[]
  aborted: Set<number>
  pauses: { at: number; until: number }[]
  endAt: number
  minEffective: number
}

export function simulate(
  options: GovernorOptions,
  arrivals: readonly Arrival[],
  pauses: readonly PauseEvent[] = [],
  observations: readonly ObserveEvent[] = [],
  agingForCheck = options.agingMs ?? 60_000,
  checkOrder = true,
): SimResult {
  const core = new GovernorCore(options)
  const t0 = 0
  const arrivalAt: number[] = []
  let acc = t0
  for (const a of arrivals) arrivalAt.push((acc += a.gapMs))
  const tickets: Ticket[] = []
  const queued = new Map<number, Ticket>()
  const finishes: number[] = []
  const aborts: { at: number; ticket: Ticket }[] = []
  const aborted = new Set<number>()
  const starts: SimStart[] = []
  const pauseLog: { at: number; until: number }[] = []
  const serviceOf = new Map<number, number>()
  let ai = 0
  let pi = 0
  let oi = 0
  let wakeAt: number | undefined
  let now = t0
  let minEffective = core.effectiveLimit
  const sortedPauses = [...pauses].sort((a, b) => a.at - b.at)
  const sortedObs = [...observations].sort((a, b) => a.at - b.at)
  for (let guard = 0; guard < 5_000_000; guard++) {
    // Events due now: finishes, pauses, observations, arrivals, aborts; then one poll.
    finishes.sort((a, b) => a - b)
    while (finishes.length > 0 && (finishes[0] ?? Infinity) <= now) {
      finishes.shift()
      core.finish()
    }
    while (pi < sortedPauses.length && (sortedPauses[pi]?.at ?? Infinity) <= now) {
      const p = sortedPauses[pi++]!
      core.pause(p.at + p.forMs)
      pauseLog.push({ at: p.at, until: p.at + p.forMs })
    }
    while (oi < sortedObs.length && (sortedObs[oi]?.at ?? Infinity) <= now) {
      const o = sortedObs[oi++]!
      core.observe({ startedAt: now, at: now, status: 200, limitHeader: core.limit, remainingHeader: o.remaining })
      minEffective = Math.min(minEffective, core.effectiveLimit)
    }
    while (ai < arrivals.length && (arrivalAt[ai] ?? Infinity) <= now) {
      const a = arrivals[ai]!
      const ticket = core.enqueue(a.priority, arrivalAt[ai]!)
      tickets.push(ticket)
      queued.set(ticket.id, ticket)
      serviceOf.set(ticket.id, a.serviceMs)
      if (a.abortAfterMs !== undefined) aborts.push({ at: arrivalAt[ai]! + a.abortAfterMs, ticket })
      ai++
    }
    for (let i = aborts.length - 1; i >= 0; i--) {
      const ab = aborts[i]!
      if (ab.at > now) continue
      aborts.splice(i, 1)
      if (core.cancel(ab.ticket)) {
        aborted.add(ab.ticket.id)
        queued.delete(ab.ticket.id)
      }
    }
    const polled = core.poll(now)
    wakeAt = polled.wakeAt
    for (const ticket of polled.started) {
      queued.delete(ticket.id)
      const violations: string[] = []
      const eff = (t: Ticket): number =>
        Number.isFinite(agingForCheck) ? Math.max(0, t.level - Math.floor((now - t.enqueuedAt) / agingForCheck)) : t.level
      if (checkOrder)
        for (const other of queued.values()) {
          if (eff(other) < eff(ticket) || (eff(other) === eff(ticket) && other.enqueuedAt < ticket.enqueuedAt)) {
            violations.push(`ticket ${ticket.id} (${ticket.priority}) started at ${now} before ${other.id} (${other.priority})`)
          }
        }
      starts.push({ at: now, ticket, violations })
      finishes.push(now + (serviceOf.get(ticket.id) ?? 0))
      minEffective = Math.min(minEffective, core.effectiveLimit)
    }
    const next = Math.min(
      arrivalAt[ai] ?? Infinity,
      ...finishes,
      wakeAt ?? Infinity,
      sortedPauses[pi]?.at ?? Infinity,
      sortedObs[oi]?.at ?? Infinity,
      aborts.reduce((m, x) => Math.min(m, x.at), Infinity),
    )
    if (next === Infinity) break
    now = Math.max(now, next)
  }
  return { starts, tickets, aborted, pauses: pauseLog, endAt: now, minEffective }
}

export { maxInWindow } from '../../bench/lib.js'
export { PRIORITIES }
