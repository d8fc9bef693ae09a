// The destination's figures on the daemon's /metrics, read from its status when scraped: how far
// behind the mirror it is (changes and seconds), what it has written, and its failures. The status
// is read once a scrape (it reads the mirror's change log); in summary mode the process sums the counters.
import { Counter, Gauge, type Registry } from 'prom-client'
import type { DestinationStatus } from '../destination/index.js'
import type { SummedFamilies } from './account-metric-families.js'
import { perScrape } from './daemon-metrics.js'

export function registerDestinationMetrics(
  registry: Registry,
  read: () => DestinationStatus,
  summed?: { families: SummedFamilies; owner: object },
): void {
  const registers = [registry]
  const status = perScrape(read)
  const labels = { destination: 'postgres' }
  const gauge = (name: string, help: string, pick: (s: DestinationStatus) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['destination'],
      registers,
      collect() {
        this.set(labels, pick(status()))
      },
    })
  const counter = (name: string, help: string, pick: (s: DestinationStatus) => number) => {
    if (summed !== undefined)
      return summed.families.add(summed.owner, 'counter', name, `${help}, summed over the accounts`, () => pick(status()), labels)
    let seen = 0
    return new Counter({
      name,
      help,
      labelNames: ['destination'],
      registers,
      collect() {
        const now = pick(status())
        if (now > seen) this.inc(labels, now - seen)
        seen = now
      },
    })
  }
  gauge('fsm_destination_lag_changes', 'change_log entries the destination has not applied yet', (s) => s.lagChanges)
  gauge(
    'fsm_destination_lag_seconds',
    'Age of the oldest change the destination has not applied yet (0 when caught up)',
    (s) => s.lagSeconds,
  )
  gauge(
    'fsm_destination_up',
    '1 while the destination replicates, 0 while it fails or Postgres keeps it waiting (a lock, a server that does not answer; see fsm-sync status)',
    (s) => (s.state === 'error' || s.state === 'waiting' ? 0 : 1),
  )
  counter('fsm_destination_rows_replicated_total', 'Rows written to the destination (loads and changes)', (s) => s.rowsReplicated)
  counter('fsm_destination_changes_applied_total', 'change_log entries applied to the destination', (s) => s.changesApplied)
  counter('fsm_destination_errors_total', 'Failed attempts to replicate (each retried with back-off)', (s) => s.errors)
  counter('fsm_destination_loads_total', 'Loads of the destination from a snapshot of the mirror', (s) => s.loads)
  counter(
    'fsm_destination_times_nulled_total',
    'Time values written to the destination as NULL: not an instant timestamptz holds (text upstream sent, year 0000)',
    (s) => s.timesNulled,
  )
}
