// One replica's series on /metrics (docs/metrics.md, Replicas), labelled `replica` only: 22 series
// per replica whatever the number of accounts. The coordinator's counts are read when scraped; the
// handover histogram is observed once a taken-over account's first sweep has ended.
import { Gauge, Histogram, type Registry } from 'prom-client'
import { STOP_REASONS, type CoordinatorStats } from '../coordination/coordinator.js'
import { mirroredLabelledCounter } from './mirrored-counter.js'

export interface ReplicaMetricSources {
  replica: string
  stats: CoordinatorStats
  owned: () => number
  /** The daemon's clock, in milliseconds. */
  now: () => number
}

/**
 * Seconds from a lease's end to the new owner's first sweep: a release is a few seconds, an expiry the
 * lease time more. 12 series: 9 fsm_replica_handover_seconds_bucket, +Inf, sum, count.
 */
const HANDOVER_BUCKETS = [1, 2, 5, 10, 15, 20, 30, 60, 300]

export class ReplicaMetrics {
  readonly #handover: Histogram
  readonly #now: () => number
  readonly #replica: string
  /** Accounts taken over whose first sweep has not ended yet: when their previous lease ended, on the daemon's clock. */
  readonly #pending = new Map<string, number>()

  constructor(registry: Registry, s: ReplicaMetricSources) {
    const registers = [registry]
    const labels = { replica: s.replica }
    this.#now = s.now
    this.#replica = s.replica
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['replica'],
        registers,
        collect() {
          this.set(labels, read())
        },
      })
    gauge('fsm_replica_accounts_owned', 'Accounts whose lease this replica holds and may act on', s.owned)
    gauge(
      'fsm_replica_accounts_waiting',
      "Accounts of the list no replica holds an unexpired lease on, at this replica's last heartbeat",
      () => s.stats.waiting,
    )
    mirroredLabelledCounter(
      registers,
      'fsm_replica_lease_renewals_total',
      'Heartbeats that renewed every lease of this replica in one statement (ok), or failed to (failed)',
      ['replica', 'outcome'],
      () => [
        [{ ...labels, outcome: 'ok' }, s.stats.renewals.ok],
        [{ ...labels, outcome: 'failed' }, s.stats.renewals.failed],
      ],
    )
    mirroredLabelledCounter(
      registers,
      'fsm_replica_takeovers_total',
      'Leases this replica took over from an earlier owner (released or expired)',
      ['replica'],
      () => [[labels, s.stats.takeovers]],
    )
    mirroredLabelledCounter(
      registers,
      'fsm_replica_accounts_stopped_total',
      'Accounts whose runtime stopped on this replica, by reason (lost, expired, handover, shutdown, displaced)',
      ['replica', 'reason'],
      () => STOP_REASONS.map((reason) => [{ ...labels, reason }, s.stats.stopped[reason]] as const),
    )
    this.#handover = new Histogram({
      name: 'fsm_replica_handover_seconds',
      help: "From the end of an account's previous lease (released or expired, by the server's clock) to the end of its first sweep here",
      labelNames: ['replica'],
      buckets: HANDOVER_BUCKETS,
      registers,
    })
    this.#handover.zero(labels)
  }

  /** A takeover of `accountId`: its previous lease ended `vacantMs` ago. */
  takenOver(accountId: string, vacantMs: number): void {
    this.#pending.set(accountId, this.#now() - vacantMs)
  }

  /**
   * The runtime of an account just acquired: once `firstSweep` resolves true (its first sweep ended
   * and the lease is still held), a takeover's handover is observed. Other acquisitions observe nothing.
   */
  sweeping(accountId: string, firstSweep: Promise<boolean>): void {
    const since = this.#pending.get(accountId)
    this.#pending.delete(accountId)
    if (since === undefined) return
    firstSweep.then(
      (held) => held && this.#handover.observe({ replica: this.#replica }, Math.max(0, this.#now() - since) / 1000),
      () => undefined,
    )
  }
}
