// The families an account observes as things happen (requests, runs, their durations, retention),
// and the process's sums of the counters an account reads when scraped. With `metrics.perAccount`
// "summary" they live once in the process's registry, without `account`: the series of a thousand
// accounts stay few (docs/metrics.md, Series per account); with "full" each account has its own.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

export type PerAccountMetrics = 'full' | 'summary'

export function eventFamilies(registry: Registry) {
  const registers = [registry]
  return {
    requests: new Counter({
      name: 'fsm_api_requests_total',
      help: 'Upstream answers by route and HTTP status (0: failed below HTTP), every attempt counted',
      labelNames: ['route', 'status'],
      registers,
    }),
    rateLimited: new Counter({ name: 'fsm_api_rate_limited_total', help: 'Upstream 429 answers', labelNames: ['route'], registers }),
    retries: new Counter({
      name: 'fsm_api_retries_total',
      help: 'Upstream attempts after the first of a request',
      labelNames: ['route'],
      registers,
    }),
    rows: new Counter({
      name: 'fsm_rows_written_total',
      help: 'Rows a run changed in the mirror, by stream and kind',
      labelNames: ['stream', 'kind'],
      registers,
    }),
    runs: new Counter({
      name: 'fsm_runs_total',
      help: 'Finished runs by stream, kind and outcome',
      labelNames: ['stream', 'kind', 'outcome'],
      registers,
    }),
    // 12 series per stream and kind (9 fsm_run_duration_seconds_bucket, +Inf, sum, count).
    durations: new Histogram({
      name: 'fsm_run_duration_seconds',
      help: 'Duration of sweeps, reconciliations and triggers',
      labelNames: ['stream', 'kind'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
      registers,
    }),
    notConnected: new Counter({
      name: 'fsm_integration_not_connected_total',
      help: 'Triggers refused with INTEGRATION_NOT_CONNECTED',
      labelNames: ['integration'],
      registers,
    }),
    retention: new Counter({
      name: 'fsm_retention_deleted_rows_total',
      help: 'Rows removed by retention passes, by table (webhook_inbox_bodies: bodies of applied deliveries dropped, their ids kept)',
      labelNames: ['table'],
      registers,
    }),
  }
}

export type EventFamilies = ReturnType<typeof eventFamilies>

type Labels = Record<string, string>
type Family = { sources: Map<object, () => number>; retired: number; counter: boolean }

/**
 * Counters and gauges of the process that add up what each account reads when scraped (its webhook
 * path's, its checkpoints', its destination's). A removed account's counts stay in the counters,
 * so they never go down; its gauges leave the sum.
 */
export class SummedFamilies {
  readonly #registry: Registry
  readonly #families = new Map<string, Family>()
  /** Readings of owners not attached yet: an account whose open fails is never summed, and is let go with it. */
  readonly #pending = new WeakMap<object, [Family, () => number][]>()

  constructor(registry: Registry) {
    this.#registry = registry
  }

  /** Adds `owner`'s reading to the family (made the first time it is named), once `owner` is attached. */
  add(owner: object, kind: 'counter' | 'gauge', name: string, help: string, read: () => number, labels: Labels = {}): void {
    let family = this.#families.get(name)
    if (family === undefined) {
      const made = { sources: new Map<object, () => number>(), retired: 0, counter: kind === 'counter' }
      family = made
      this.#families.set(name, made)
      const sum = () => {
        let total = made.retired
        for (const r of made.sources.values()) total += r()
        return total
      }
      const options = { name, help, labelNames: Object.keys(labels), registers: [this.#registry] }
      if (kind === 'counter')
        new Counter({
          ...options,
          collect() {
            this.reset()
            this.inc(labels, sum())
          },
        })
      else
        new Gauge({
          ...options,
          collect() {
            this.set(labels, sum())
          },
        })
    }
    const pending = this.#pending.get(owner) ?? []
    this.#pending.set(owner, pending)
    pending.push([family, read])
  }

  /** `owner` runs: its readings count from now on. */
  attach(owner: object): void {
    for (const [family, read] of this.#pending.get(owner) ?? []) family.sources.set(owner, read)
    this.#pending.delete(owner)
  }

  /** `owner` leaves: its counters' last readings are kept in the sums. */
  retire(owner: object): void {
    this.#pending.delete(owner)
    for (const family of this.#families.values()) {
      const read = family.sources.get(owner)
      if (read === undefined) continue
      family.sources.delete(owner)
      // A reading that fails now (its mirror already closed) is lost to the sum, not to the process.
      try {
        if (family.counter) family.retired += read()
      } catch {
        /* left out */
      }
    }
  }
}

/** What the process lends each account's metrics in summary mode. */
export interface SharedFamilies {
  events: EventFamilies
  summed: SummedFamilies
}
